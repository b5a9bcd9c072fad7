/**
 * The merchant API's OpenAPI document as the contract fuzzer reads it: its operations, schemas with
 * their $refs followed, and two validators of its own (ajv, independent of Prism's): one for
 * bodies and answers, one that coerces parameters' wire strings to their schema's type as Prism
 * does. It judges whether a request conforms to the document and whether an answer is one the
 * document declares for the operation, its status and media type.
 */
import type { Ajv2020, ValidateFunction } from "ajv/dist/2020.js"
import { documentAjv, jsonPointer } from "./openapi.js"
import type { Reply } from "./raw-http.js"

export const PREFIX = "/api/v1/merchant"

export interface Operation {
  readonly template: string
  readonly method: string
  readonly operation: any
}

/** How a report names an operation: `GET /purchases/{purchaseId}`. */
export const label = (op: Operation) => `${op.method.toUpperCase()} ${op.template.startsWith(PREFIX) ? op.template.slice(PREFIX.length) : op.template}`

/** The parts of the operation's pointer in the document. */
export const opPath = (op: Operation) => ["paths", op.template, op.method]

/** The response an operation declares for a status: its own, its class's (`4XX`) or the default. */
export const responseFor = (operation: any, status: number): any =>
  operation.responses?.[String(status)] ?? operation.responses?.[`${String(status)[0]}XX`] ?? operation.responses?.default

/** A request as the document reads it: an operation, the path with its query, the headers and the body sent. */
export interface DocumentRequest {
  readonly op: Operation
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string
}

export class ContractDocument {
  private readonly plain: Ajv2020
  private readonly coercing: Ajv2020
  private readonly compiled = new Map<string, ValidateFunction>()

  constructor(readonly doc: any) {
    this.plain = documentAjv(doc)
    this.coercing = documentAjv(doc, true)
  }

  /** Every operation of the document but the realtime feed's (a WebSocket). */
  operations(): Array<Operation> {
    const operations: Array<Operation> = []
    for (const [template, item] of Object.entries(this.doc.paths) as Array<[string, any]>) {
      if (template.endsWith("/items/stream")) continue
      for (const method of ["get", "put", "post", "delete", "patch"]) {
        if (item[method] !== undefined) operations.push({ template, method, operation: item[method] })
      }
    }
    return operations
  }

  /** A schema with its $ref followed (siblings of the $ref kept over the target's keywords). */
  readonly deref = (schema: any): any => {
    if (schema === undefined || typeof schema.$ref !== "string") return schema
    const { $ref, ...siblings } = schema
    return { ...this.deref(this.at($ref)), ...siblings }
  }

  private at(ref: string): any {
    return ref.replace(/^#\//, "").split("/").reduce((node: any, part) => node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], this.doc)
  }

  private validatorAt(coerce: boolean, key: string, schema: object): ValidateFunction {
    const cacheKey = `${coerce ? "c" : "p"}:${key}`
    let validate = this.compiled.get(cacheKey)
    if (validate === undefined) {
      validate = (coerce ? this.coercing : this.plain).compile(schema)
      this.compiled.set(cacheKey, validate)
    }
    return validate
  }

  /** The validator of the schema at a pointer of the document. */
  validatorOf(schemaPointer: string): ValidateFunction {
    return this.validatorAt(false, schemaPointer, { $ref: `doc#/${schemaPointer}` })
  }

  /** Validates a value against the schema at a pointer of the document. */
  conforms(schemaPointer: string, value: unknown): boolean {
    return this.validatorOf(schemaPointer)(value)
  }

  /** Validates a parameter's wire string(s) the way Prism does: coerced to the schema's type first. */
  paramConforms(schemaPointer: string, raw: string | Array<string>): boolean {
    const validate = this.validatorAt(true, schemaPointer, { type: "object", properties: { v: { $ref: `doc#/${schemaPointer}` } } })
    return validate({ v: structuredClone(raw) })
  }

  /**
   * Whether a request carries what one of its operation's security requirements names: a Bearer key,
   * or the cabinet's session cookie (which generated requests never have). No requirement: any request.
   */
  private meetsSecurity(g: DocumentRequest): boolean {
    const requirements: Array<Record<string, unknown>> = g.op.operation.security ?? []
    if (requirements.length === 0) return true
    return requirements.some((requirement) =>
      Object.keys(requirement).every((scheme) =>
        scheme === "bearer" ? /^Bearer\s.+$/.test(g.headers["authorization"] ?? "") : /(^|;\s*)mer_session=/.test(g.headers["cookie"] ?? "")
      )
    )
  }

  /** Whether a request conforms to the document, by our validators (Prism is expected to agree). */
  accepts(g: DocumentRequest): boolean {
    if (!this.meetsSecurity(g)) return false
    const url = new URL(g.path, "http://x")
    const templateParts = g.op.template.split("/")
    const pathParts = url.pathname.split("/")
    if (templateParts.length !== pathParts.length) return false
    const opParts = opPath(g.op)
    for (const [index, raw] of (g.op.operation.parameters ?? []).entries()) {
      const p = this.deref(raw)
      const schemaPointer = jsonPointer(...opParts, "parameters", index, "schema")
      if (p.in === "path") {
        const value = decodeURIComponent(pathParts[templateParts.indexOf(`{${p.name}}`)]!)
        if (!this.paramConforms(schemaPointer, value)) return false
      }
      if (p.in === "query") {
        const values = url.searchParams.getAll(p.name)
        if (values.length === 0 && p.required) return false
        if (values.length > 0 && !this.paramConforms(schemaPointer, values.length === 1 ? values[0]! : values)) return false
      }
    }
    const requestBody = g.op.operation.requestBody
    if (requestBody === undefined) return g.body === undefined || g.body === ""
    if (g.body === undefined || g.body === "") return !requestBody.required
    if (!(g.headers["content-type"] ?? "").startsWith("application/json")) return false
    let parsed: unknown
    try {
      parsed = JSON.parse(g.body)
    } catch {
      return false
    }
    return this.conforms(jsonPointer(...opParts, "requestBody", "content", "application/json", "schema"), parsed)
  }

  /**
   * The service's answer against the document, by our ajv (errors.test.ts's check): no 5xx, a
   * status the operation declares, a media type declared for it, a body of its schema. Each
   * problem goes to `report` with its rule and detail.
   */
  checkAnswer(op: Operation, reply: Reply, report: (rule: string, detail: string) => void): void {
    if (reply.status >= 500) report("5xx from the service", short(reply.text))
    const declared = responseFor(op.operation, reply.status)
    if (declared === undefined) {
      report("status not declared for the operation", `declared: ${Object.keys(op.operation.responses).join(",")}; body ${short(reply.text)}`)
      return
    }
    const media = (String(reply.headers["content-type"] ?? "").split(";")[0] ?? "").trim().toLowerCase()
    const contents = declared.content ?? {}
    if (Object.keys(contents).length === 0) {
      if (reply.text !== "") report("a body where the document declares none", short(reply.text))
      return
    }
    if (contents[media] === undefined) {
      report("media type not declared for the status", `${media || "(none)"} not in ${Object.keys(contents).join(",")}; body ${short(reply.text)}`)
      return
    }
    const body = parseJson(reply.text)
    if (body === undefined) {
      report("body is not JSON", short(reply.text))
      return
    }
    const validate = this.validatorOf(jsonPointer(...opPath(op), "responses", String(reply.status), "content", media, "schema"))
    if (!validate(body)) report("body does not match the declared schema", `${JSON.stringify(validate.errors?.slice(0, 4))}; body ${short(reply.text)}`)
  }
}

/** A text cut to `n` characters for a report, saying how long it was. */
export const short = (text: string, n = 400) => (text.length > n ? `${text.slice(0, n)}…(${text.length} chars)` : text)

/** The JSON of a text, undefined when it is none. */
export const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
