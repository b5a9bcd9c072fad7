/**
 * What HttpApi's generated OpenAPI document cannot say by itself, added to it: the response
 * headers (X-Request-Id on every answer, the rate-limit headers, Retry-After on 429, the dump's
 * snapshot headers), the problem details of an unparsable body, open objects (clients accept new
 * fields; unknown request fields are ignored), and the reference texts of ApiReference.ts
 * (summaries, descriptions, tags, the webhooks). HttpApi's own decode error is taken out: decode
 * failures are answered with the per-field codes.
 */
import { OPERATIONS, PARAMETERS, TAGS, webhooks } from "./ApiReference.js"
import { API_BODY_MAX_BYTES } from "./Domain/BodyLimits.js"

type Json = { [key: string]: unknown }
const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)
const objectAt = (parent: Json, key: string): Json | undefined => isObject(parent[key]) ? parent[key] : undefined
const FRAMEWORK_REF = "#/components/schemas/HttpApiDecodeError"

const header = (type: "string" | "integer", description: string) => ({ description, schema: { type } })

const REQUEST_ID = header("string", "The request's id: the caller's X-Request-Id if it sent a reasonable one, otherwise a new one.")
const RATE_LIMIT = {
  "X-RateLimit-Limit": header("integer", "Capacity of the merchant's token bucket (the burst window's limit)."),
  "X-RateLimit-Remaining": header("integer", "Tokens left in the merchant's bucket.")
}
const RETRY_AFTER = header("integer", "Whole seconds to wait at least before retrying (1 or more).")
const SNAPSHOT = {
  ETag: header("string", "Weak ETag of the snapshot: W/\"<epoch>-<cursor>-<count>\"."),
  "X-Catalog-Cursor": header("integer", "The change-log cursor the snapshot is at: resume the feed from it. Omitted if the build crossed an epoch change."),
  "X-Catalog-Epoch": header("integer", "The epoch of X-Catalog-Cursor. Omitted with it.")
}
const DUMP_200 = {
  ...SNAPSHOT,
  "Last-Modified": header("string", "When the snapshot was built (HTTP date)."),
  "X-Items-Count": header("integer", "Items in the snapshot."),
  "Content-Encoding": header("string", "gzip when the request accepts it; absent for identity.")
}

const PROBLEM_DETAILS = {
  type: "object",
  description: "RFC 9457 problem details of a body that is not JSON (or not UTF-8, or too large: 413), with the spec's error beside them.",
  required: ["type", "title", "status", "detail", "error"],
  properties: {
    type: { type: "string" },
    title: { type: "string" },
    status: { type: "integer" },
    detail: { type: "string" },
    error: {
      type: "object",
      required: ["code", "message"],
      properties: { code: { type: "string", enum: ["MERCHANT_MALFORMED_JSON", "MERCHANT_BODY_TOO_LARGE"] }, message: { type: "string" } }
    }
  }
}
const PROBLEM_REF = { $ref: "#/components/schemas/ProblemDetails" }

/** Takes HttpApi's own decode error out of a 400 (the endpoint's field codes stay). */
const withoutFrameworkError = (responses: Json) => {
  const bad = objectAt(responses, "400")
  const media = bad && objectAt(bad, "content") && objectAt(objectAt(bad, "content")!, "application/json")
  const schema = media && objectAt(media, "schema")
  if (bad === undefined || media === undefined || schema === undefined) return
  if (schema["$ref"] === FRAMEWORK_REF) {
    delete responses["400"]
  } else if (Array.isArray(schema["anyOf"])) {
    const kept = schema["anyOf"].filter((s) => !(isObject(s) && s["$ref"] === FRAMEWORK_REF))
    media["schema"] = kept.length === 1 ? kept[0] : { ...schema, anyOf: kept }
    bad["description"] = "The request is invalid: `error.code` names the field (spec 7.2)."
  }
}

/**
 * Every operation's answers: their headers; on the POSTs, 413 for a body too large, and problem
 * details for a body that is not JSON where a body is read.
 */
const withHeadersAndProblems = (path: string, method: string, responses: Json, readsBody: boolean) => {
  if (method === "post" || method === "put") {
    if (readsBody) {
      const bad = (objectAt(responses, "400") ?? (responses["400"] = { description: "The request is invalid." })) as Json
      const content = (objectAt(bad, "content") ?? (bad["content"] = {})) as Json
      content["application/problem+json"] = { schema: PROBLEM_REF }
    }
    responses["413"] = {
      description: `The body is larger than ${API_BODY_MAX_BYTES} bytes.`,
      content: { "application/problem+json": { schema: PROBLEM_REF } }
    }
  }
  for (const [status, response] of Object.entries(responses)) {
    if (!isObject(response)) continue
    const headers: Json = { "X-Request-Id": REQUEST_ID }
    if (status !== "401" && status !== "500") Object.assign(headers, RATE_LIMIT)
    if (status === "429") headers["Retry-After"] = RETRY_AFTER
    if (path.endsWith("/items/full-dump") && status === "200") Object.assign(headers, DUMP_200)
    if (path.endsWith("/items/full-dump") && status === "304") Object.assign(headers, SNAPSHOT)
    response["headers"] = { ...(objectAt(response, "headers") ?? {}), ...headers }
  }
}

/** Objects stay open: `additionalProperties: false` is taken out everywhere. */
const opened = (node: unknown): void => {
  if (Array.isArray(node)) return node.forEach(opened)
  if (!isObject(node)) return
  if (node["additionalProperties"] === false) delete node["additionalProperties"]
  Object.values(node).forEach(opened)
}

/** Each operation of a document with its path, method and answers. */
const eachOperation = (spec: Json, f: (path: string, method: string, operation: Json, responses: Json) => void) => {
  for (const [path, item] of Object.entries(objectAt(spec, "paths") ?? {})) {
    if (!isObject(item)) continue
    for (const [method, operation] of Object.entries(item)) {
      const responses = isObject(operation) ? objectAt(operation, "responses") : undefined
      if (responses !== undefined) f(path, method, operation as Json, responses)
    }
  }
}

/** The document's schemas (made if missing), HttpApi's own decode error taken out. */
const schemasWithoutFrameworkError = (spec: Json): Json => {
  const components = (objectAt(spec, "components") ?? (spec["components"] = {})) as Json
  const schemas = (objectAt(components, "schemas") ?? (components["schemas"] = {})) as Json
  for (const name of ["HttpApiDecodeError", "Issue", "PropertyKey"]) delete schemas[name]
  return schemas
}

/** An operation's reference texts (ApiReference.ts): its summary, description and parameters'. */
const withReference = (operation: Json) => {
  const texts = OPERATIONS[String(operation["operationId"])]
  if (texts !== undefined) [operation["summary"], operation["description"]] = texts
  for (const parameter of Array.isArray(operation["parameters"]) ? operation["parameters"] : []) {
    if (isObject(parameter) && parameter["description"] === undefined && PARAMETERS[String(parameter["name"])] !== undefined) {
      parameter["description"] = PARAMETERS[String(parameter["name"])]
    }
  }
}

export const completeDocument = (spec: Json): Json => {
  eachOperation(spec, (path, method, operation, responses) => {
    withoutFrameworkError(responses)
    withHeadersAndProblems(path, method, responses, objectAt(operation, "requestBody") !== undefined)
    withReference(operation)
  })
  for (const tag of Array.isArray(spec["tags"]) ? spec["tags"] : []) {
    if (isObject(tag) && TAGS[String(tag["name"])] !== undefined) tag["description"] = TAGS[String(tag["name"])]
  }
  spec["webhooks"] = webhooks()
  schemasWithoutFrameworkError(spec)["ProblemDetails"] = PROBLEM_DETAILS
  opened(spec)
  return spec
}

/** The admin API's document: its decode failures are ADMIN_INVALID_REQUEST, not HttpApi's own error. */
export const completeAdminDocument = (spec: Json): Json => {
  eachOperation(spec, (_path, _method, _operation, responses) => withoutFrameworkError(responses))
  schemasWithoutFrameworkError(spec)
  opened(spec)
  return spec
}
