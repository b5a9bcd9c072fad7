/**
 * The service's OpenAPI document as the tests read it: JSON pointers into it, an ajv that knows it
 * as "doc" (so `doc#/<pointer>` names any of its schemas), the error codes a response declares,
 * and a real answer checked against what the document declares for its status and media type.
 */
import formats from "ajv-formats"
import { Ajv2020 } from "ajv/dist/2020.js"
import { expect } from "vitest"
import type { RunningServer } from "./server.js"

/** A JSON pointer (RFC 6901) of the parts given, without its leading "/" ("paths/~1api~1v1~1merchant~1buy/post"). */
export const jsonPointer = (...parts: ReadonlyArray<string | number>) => parts.map((p) => String(p).replaceAll("~", "~0").replaceAll("/", "~1")).join("/")

/** An ajv for OpenAPI 3.1's dialect with the formats, holding the document as "doc"; `coerceTypes`: strings read as their schema's type. */
export const documentAjv = (doc: unknown, coerceTypes = false): Ajv2020 => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, coerceTypes }) // a CommonJS module's default export, as TypeScript sees it from ESM
  ;(formats as unknown as { default: (ajv: Ajv2020) => void }).default(ajv)
  ajv.addSchema(doc as object, "doc")
  return ajv
}

/** The error codes a response's schema allows (through $ref, anyOf and oneOf). */
const codesOf = (doc: any, schema: any): Array<string> => {
  if (schema === undefined) return []
  if (Array.isArray(schema.anyOf)) return schema.anyOf.flatMap((s: any) => codesOf(doc, s))
  if (Array.isArray(schema.oneOf)) return schema.oneOf.flatMap((s: any) => codesOf(doc, s))
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.replace("#/components/schemas/", "")
    return codesOf(doc, doc.components.schemas[name])
  }
  const code = schema.properties?.error?.properties?.code
  if (code === undefined) return []
  return code.enum ?? (code.const !== undefined ? [code.const] : [])
}

/** The error codes an operation's JSON response of `status` declares. */
export const responseCodes = (doc: any, operation: any, status: string) => codesOf(doc, operation.responses?.[status]?.content?.["application/json"]?.schema)

export interface CheckInit {
  readonly body?: unknown
  /** A body sent as it is (malformed JSON, nothing). */
  readonly raw?: string
  /** Another key, or null for none: the merchant's key by default. */
  readonly key?: string | null
}

/**
 * Sends a request to the merchant API with `apiKey` and expects its answer to be what the document
 * declares for the operation, its status and its media type: the answer's JSON.
 */
export const documentedAnswers = (server: RunningServer, doc: any, apiKey: string) => {
  const ajv = documentAjv(doc)
  return async (method: string, path: string, init: CheckInit = {}): Promise<any> => {
    const res = await fetch(`${server.baseUrl}/api/v1/merchant${path}`, {
      method,
      headers: {
        ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? apiKey}` }),
        ...(init.body !== undefined || init.raw !== undefined ? { "content-type": "application/json" } : {})
      },
      ...(init.raw !== undefined ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
    })
    const media = (res.headers.get("content-type") ?? "").split(";")[0]!
    const body: any = await res.json()
    const template = Object.keys(doc.paths).find((p) => new RegExp(`^${p.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(`/api/v1/merchant${path.split("?")[0]}`))!
    const where = `${method} ${path} ${res.status} ${media}`
    const declared = doc.paths[template][method.toLowerCase()].responses[String(res.status)]?.content?.[media]
    expect({ where, declared: declared !== undefined }).toEqual({ where, declared: true })
    const validate = ajv.getSchema(`doc#/${jsonPointer("paths", template, method.toLowerCase(), "responses", String(res.status), "content", media, "schema")}`)!
    expect({ where, valid: validate(body), errors: validate.errors ?? null }).toEqual({ where, valid: true, errors: null })
    return body
  }
}
