/**
 * A type guard compiled from a schema's AST, for reads too large for Schema's own checks: the
 * catalogue's million stored items are checked at start-up in about a tenth of the time
 * `Schema.is` takes (it builds a result for every field). It accepts exactly what `Schema.is`
 * accepts (test/domain/Guard.test.ts), for the schemas whose type and encoded sides are one:
 * strings, numbers, booleans, literals, unions, refinements (their own filters run), arrays and
 * structs. Any other node is refused when the guard is built, never let through when it runs.
 */
import { Option, type Schema, SchemaAST as AST } from "effect"

type Check = (input: unknown) => boolean

const compile = (ast: AST.AST): Check => {
  switch (ast._tag) {
    case "StringKeyword":
      return (u) => typeof u === "string"
    case "NumberKeyword":
      return (u) => typeof u === "number"
    case "BooleanKeyword":
      return (u) => typeof u === "boolean"
    case "Literal": {
      const literal = ast.literal
      return (u) => u === literal
    }
    case "Union": {
      const members = ast.types.map(compile)
      if (members.length === 2) {
        const [first, second] = members as [Check, Check]
        return (u) => first(u) || second(u)
      }
      return (u) => members.some((member) => member(u))
    }
    case "Refinement": {
      const from = compile(ast.from)
      return (u) => from(u) && Option.isNone(ast.filter(u, AST.defaultParseOption, ast))
    }
    case "TupleType": {
      if (ast.elements.length > 0 || ast.rest.length !== 1) break
      const element = compile(ast.rest[0]!.type)
      return (u) => Array.isArray(u) && u.every(element)
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length > 0) break
      const properties = ast.propertySignatures.map((property) => {
        if (typeof property.name !== "string") throw new Error(`guard: property key ${String(property.name)} is not a string`)
        return { name: property.name, optional: property.isOptional, check: compile(property.type) }
      })
      return (u) => {
        if (typeof u !== "object" || u === null) return false
        for (let i = 0; i < properties.length; i++) {
          const { check, name, optional } = properties[i]!
          if (!Object.hasOwn(u, name)) {
            if (optional) continue
            return false
          }
          if (!check(Reflect.get(u, name))) return false
        }
        return true
      }
    }
  }
  throw new Error(`guard: a schema node of kind ${ast._tag} is not supported`)
}

/** The guard of a schema whose type and encoded sides are the same; throws if the schema has other nodes. */
export const guardOf = <A>(schema: Schema.Schema<A, A>): (input: unknown) => input is A => {
  const check = compile(schema.ast)
  return (input): input is A => check(input)
}
