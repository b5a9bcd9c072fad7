/**
 * Requests generated from the document's operations, for the contract fuzzer: parameters, body and
 * key from the operation's schemas, with one thing broken or none: a parameter invalid, missing,
 * repeated or unknown; a body with a field invalid or missing, extra fields, another JSON type,
 * empty, malformed JSON or not declared JSON; no key, a wrong one, or the key under Basic.
 */
import * as fc from "fast-check"
import { type ContractDocument, type Operation, opPath } from "./contract-document.js"
import { jsonPointer } from "./openapi.js"
import { JUNK_STRINGS, type SchemaValues, stringArb } from "./schema-arbitraries.js"

export type Auth = "merchant" | "none" | "wrong" | "basic"

export interface Generated {
  readonly op: Operation
  readonly path: string
  readonly headers: Record<string, string>
  readonly auth: Auth
  readonly body?: string
  /** What was made invalid (or "valid"): for the report. */
  readonly note: string
  /** A body that is not JSON: not sent through Prism (support/prism.ts says why). */
  readonly malformedJson: boolean
}

const encodeQuery = (pairs: ReadonlyArray<readonly [string, string]>) =>
  pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")}`

const wire = (v: unknown) => (typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" || v === null ? String(v) : JSON.stringify(v))

/** A generated request for one operation: parameters, body and key from its schemas, one thing broken or none. */
export const operationArb = (op: Operation, document: ContractDocument, schemaValues: SchemaValues, keys: { good: string }): fc.Arbitrary<Generated> => {
  const parameters: Array<any> = (op.operation.parameters ?? []).map(document.deref)
    // the dump may be gzip when asked: Accept-Encoding is never sent (the document lists it as a parameter)
    .filter((p: any) => !(p.in === "header" && p.name.toLowerCase() === "accept-encoding"))
  const paramPointer = (p: any) =>
    jsonPointer(
      ...opPath(op),
      "parameters",
      (op.operation.parameters ?? []).findIndex((q: any) => document.deref(q).name === p.name),
      "schema"
    )
  const paramValue = (p: any): fc.Arbitrary<string> => {
    if (p.in === "header") {
      return fc.oneof(fc.constantFrom(...(schemaValues.hints.byName[p.name] ?? ["\"x\""]) as Array<string>), fc.stringMatching(/^[\x21-\x7e]{1,40}$/))
    }
    return schemaValues.valid(p.schema, p.name).map(wire).filter((raw) => document.paramConforms(paramPointer(p), raw))
  }
  const paramsArb = fc.record(
    Object.fromEntries(parameters.map((p) => [`${p.in}:${p.name}`, p.required ? paramValue(p) : fc.option(paramValue(p), { nil: undefined, freq: 2 })]))
  ) as fc.Arbitrary<Record<string, string | undefined>>

  type ParamMutation = { kind: "none" } | { kind: "invalid"; param: any; raw: string } | { kind: "drop"; param: any } | {
    kind: "extra"
    name: string
    raw: string
  } | {
    kind: "repeat"
    param: any
  }
  const mutations: Array<{ weight: number; arbitrary: fc.Arbitrary<ParamMutation> }> = [{ weight: 8, arbitrary: fc.constant({ kind: "none" }) }]
  // a parameter can be broken only if some string is refused (any string is a valid `cursor`)
  const breakable = parameters.filter((p) => p.in !== "header" && JUNK_STRINGS.some((raw) => !document.paramConforms(paramPointer(p), raw)))
  if (breakable.length > 0) {
    mutations.push({
      weight: 4,
      arbitrary: fc.constantFrom(...breakable).chain((param) =>
        schemaValues.invalid(param.schema, (v) => document.paramConforms(paramPointer(param), wire(v))).map(wire)
          // an empty, "." or ".." path segment makes another URL (another route), not a bad id for this one
          .filter((raw) => !document.paramConforms(paramPointer(param), raw) && (param.in !== "path" || !["", ".", ".."].includes(raw)))
          .map((raw): ParamMutation => ({ kind: "invalid", param, raw }))
      )
    })
  }
  const required = parameters.filter((p) => p.required && p.in === "query")
  if (required.length > 0) mutations.push({ weight: 1, arbitrary: fc.constantFrom(...required).map((param): ParamMutation => ({ kind: "drop", param })) })
  if (op.method === "get") {
    mutations.push({
      weight: 1,
      arbitrary: fc.tuple(fc.stringMatching(/^[a-z_]{1,12}$/), stringArb(0, 10)).filter(([name]) => !parameters.some((p) => p.name.toLowerCase() === name))
        .map(([name, raw]): ParamMutation => ({ kind: "extra", name, raw }))
    })
    const queries = parameters.filter((p) => p.in === "query")
    if (queries.length > 0) mutations.push({ weight: 1, arbitrary: fc.constantFrom(...queries).map((param): ParamMutation => ({ kind: "repeat", param })) })
  }

  // the body: valid, or one field broken, a required field missing, extra fields, another JSON type, empty, not JSON, not declared JSON
  const content = op.operation.requestBody?.content?.["application/json"]
  const bodyPointer = content === undefined
    ? ""
    : jsonPointer(...opPath(op), "requestBody", "content", "application/json", "schema")
  type Body = { text?: string; contentType?: string; note: string }
  let bodyArb: fc.Arbitrary<Body> = fc.constant({ note: "" })
  if (content !== undefined) {
    const schema = document.deref(content.schema)
    const valid = schemaValues.valid(schema, "").filter((v) => document.conforms(bodyPointer, v)) as fc.Arbitrary<Record<string, unknown>>
    const fields = Object.keys(schema.properties ?? {})
    const bodies: Array<{ weight: number; arbitrary: fc.Arbitrary<Body> }> = [
      { weight: 8, arbitrary: valid.map((v) => ({ text: JSON.stringify(v), note: "valid body" })) },
      {
        weight: 2,
        arbitrary: fc.tuple(valid, fc.dictionary(fc.stringMatching(/^[a-z_]{1,10}$/), fc.jsonValue({ maxDepth: 1 }), { minKeys: 1, maxKeys: 3 })).map((
          [v, extra]
        ) => ({
          text: JSON.stringify({ ...extra, ...v }),
          note: "extra fields"
        }))
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom("[]", "null", "0", "-1", "1e400", "\"item\"", "true", "[{}]", "[[[[[[]]]]]]").map((text) => ({
          text,
          note: "another JSON type"
        }))
      },
      { weight: 1, arbitrary: fc.constant({ text: "", note: "empty body" }) },
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.constantFrom("{", "{\"item_id\": ", "{'a': 1}", "[1, 2", "nul", "{\"a\": 1}}", "{\"a\": 01}", "\u0000", "{\"a\": NaN}"),
          valid.chain((v) => {
            const text = JSON.stringify(v)
            return fc.integer({ min: 1, max: Math.max(1, text.length - 1) }).map((n) => text.slice(0, n))
          })
        ).filter((text) => {
          try {
            JSON.parse(text)
            return false
          } catch {
            return text !== ""
          }
        }).map((text) => ({ text, note: "malformed JSON" }))
      },
      { weight: 1, arbitrary: valid.map((v) => ({ text: JSON.stringify(v), contentType: "text/plain", note: "text/plain body" })) }
    ]
    if (fields.length > 0) {
      bodies.push({
        weight: 4,
        arbitrary: fc.tuple(valid, fc.constantFrom(...fields)).chain(([v, field]) =>
          schemaValues.invalid(schema.properties[field], (x) => document.conforms(bodyPointer, { ...v, [field]: x })).map((x) => ({
            text: JSON.stringify({ ...v, [field]: x }),
            note: `invalid ${field}`
          }))
        )
      })
    }
    if ((schema.required ?? []).length > 0) {
      bodies.push({
        weight: 2,
        arbitrary: fc.tuple(valid, fc.constantFrom(...(schema.required as Array<string>))).map(([v, field]) => {
          const { [field]: _dropped, ...rest } = v
          return { text: JSON.stringify(rest), note: `missing ${field}` }
        })
      })
    }
    bodyArb = fc.oneof(...bodies)
  }

  const authArb = fc.oneof(
    { weight: 16, arbitrary: fc.constant<Auth>("merchant") },
    { weight: 1, arbitrary: fc.constant<Auth>("none") },
    { weight: 1, arbitrary: fc.constant<Auth>("wrong") },
    { weight: 1, arbitrary: fc.constant<Auth>("basic") }
  )

  return fc.record({
    params: paramsArb,
    mutation: fc.oneof(...mutations),
    body: bodyArb,
    auth: authArb,
    wrongKey: fc.stringMatching(/^mer_live_[A-Za-z0-9_-]{32}$/)
  }).map(
    ({ auth, body, mutation, params, wrongKey }): Generated => {
      const values = { ...params }
      const notes: Array<string> = []
      if (mutation.kind === "invalid") {
        values[`${mutation.param.in}:${mutation.param.name}`] = mutation.raw
        notes.push(`invalid ${mutation.param.in} ${mutation.param.name}`)
      }
      if (mutation.kind === "drop") {
        delete values[`query:${mutation.param.name}`]
        notes.push(`missing query ${mutation.param.name}`)
      }
      let path = op.template
      const query: Array<[string, string]> = []
      const headers: Record<string, string> = {}
      for (const p of parameters) {
        const value = values[`${p.in}:${p.name}`]
        if (value === undefined) continue
        if (p.in === "path") path = path.replace(`{${p.name}}`, encodeURIComponent(value))
        if (p.in === "query") query.push([p.name, value])
        if (p.in === "header") headers[p.name] = value
      }
      if (mutation.kind === "extra") {
        query.push([mutation.name, mutation.raw])
        notes.push(`extra query ${mutation.name}`)
      }
      if (mutation.kind === "repeat") {
        const first = query.find(([k]) => k === mutation.param.name)
        if (first !== undefined) {
          query.push([first[0], first[1]])
          notes.push(`repeated query ${mutation.param.name}`)
        }
      }
      if (body.note !== "") notes.push(body.note)
      if (auth === "merchant") headers["authorization"] = `Bearer ${keys.good}`
      if (auth === "wrong") headers["authorization"] = `Bearer ${wrongKey}`
      if (auth === "basic") headers["authorization"] = `Basic ${Buffer.from(`merchant:${keys.good}`).toString("base64")}`
      if (auth !== "merchant") notes.push(`auth ${auth}`)
      if (body.text !== undefined) headers["content-type"] = body.contentType ?? "application/json"
      return {
        op,
        path: path + encodeQuery(query),
        headers,
        auth,
        ...(body.text !== undefined ? { body: body.text } : {}),
        note: notes.join(", ") || "valid",
        malformedJson: body.text !== undefined && body.contentType === undefined && !parsesAsJson(body.text)
      }
    }
  )
}

/** An empty body is no body; anything else must parse. */
const parsesAsJson = (text: string) => {
  if (text === "") return true
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
