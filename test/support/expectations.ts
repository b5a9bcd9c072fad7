/** Assertions shared by the black-box tests, and the narrowing of a raw answer's JSON (`unknown`) to what a test reads. */
import { Either, ParseResult, Predicate, Schema } from "effect"
import { expect } from "vitest"
import { expectNoUndeclaredFields } from "./client.js"
import type { JsonResponse } from "./server.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** ISO 8601 UTC with a Z suffix (spec 1). */
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

export const isUuid = (s: unknown): boolean => typeof s === "string" && UUID.test(s)

/** What the narrowing helpers read of a raw answer (the merchant and admin APIs' and the cabinet's alike). */
export interface Answer {
  readonly status: number
  readonly text: string
  readonly json: unknown
}

/**
 * A raw answer's JSON decoded by `schema` (an endpoint's success schema from src, or one of the
 * test's own): the test fails with the text when it does not decode, and on any field the schema
 * does not declare (decoding alone would drop it), as the typed clients do.
 */
export const bodyOf = <A, I>(res: Answer, schema: Schema.Schema<A, I>): A => {
  const decoded = Schema.decodeUnknownEither(schema)(res.json)
  if (Either.isLeft(decoded)) {
    throw new Error(`the ${res.status} answer does not decode: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}\n${res.text.slice(0, 2_000)}`)
  }
  expectNoUndeclaredFields(res.json, decoded.right)
  return decoded.right
}

/** The JSON object of an answer, its keys in the order sent (the test fails when the JSON is no object). */
export const objectOf = (res: Answer): Readonly<Record<string, unknown>> => {
  if (!Predicate.isRecord(res.json)) throw new Error(`the ${res.status} answer is no JSON object: ${res.text.slice(0, 2_000)}`)
  return res.json
}

/** The spec's Error body (2.1): exactly `{"error":{"code","message"}}`, a non-empty message. */
export const ErrorBody = Schema.Struct({ error: Schema.Struct({ code: Schema.String, message: Schema.NonEmptyString }) })

/** The code and message of an answer that must be the spec's Error body (exactly its fields). */
export const errorBody = (res: Answer): { readonly code: string; readonly message: string } => bodyOf(res, ErrorBody).error

/**
 * A value inside loosely shaped JSON (`field(json, "items", 0, "id")`), undefined where the path
 * leads nowhere: for reads whose shape the test does not assert, and for messages.
 */
export const field = (json: unknown, ...path: ReadonlyArray<string | number>): unknown =>
  path.reduce<unknown>((node, key) => Predicate.hasProperty(node, key) ? node[key] : undefined, json)

/** An array inside loosely shaped JSON (as `field`), empty where the path leads to anything else. */
export const arrayField = (json: unknown, ...path: ReadonlyArray<string | number>): ReadonlyArray<unknown> => {
  const value = field(json, ...path)
  return Array.isArray(value) ? value : []
}

/** The error code of any answer, undefined when it has none (for tallies and messages). */
export const codeOf = (res: Pick<Answer, "json">): unknown => field(res.json, "error", "code")

/**
 * The spec's Error body (2.1): exactly `{"error":{"code","message"}}`, JSON content type, and the
 * X-Request-Id every response carries (CONTRACT 6).
 */
export const expectError = (res: JsonResponse, status: number, code: string) => {
  expect({ status: res.status, body: res.json }, res.text).toMatchObject({ status, body: { error: { code } } })
  errorBody(res)
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
  expect(res.headers.get("x-request-id") ?? "").not.toBe("")
}

/** X-RateLimit-Limit and X-RateLimit-Remaining as integers (spec 7.2). */
export const rateLimitHeaders = (res: JsonResponse) => {
  const limit = res.headers.get("x-ratelimit-limit")
  const remaining = res.headers.get("x-ratelimit-remaining")
  expect(limit ?? "(absent)", "X-RateLimit-Limit").toMatch(/^\d+$/)
  expect(remaining ?? "(absent)", "X-RateLimit-Remaining").toMatch(/^\d+$/)
  return { limit: Number(limit), remaining: Number(remaining) }
}

/** A 2xx/4xx body's money value has at most two decimals (CONTRACT 6). */
export const expectUsd = (n: unknown) => {
  expect(typeof n).toBe("number")
  expect(Number.isFinite(n)).toBe(true)
  expect(Math.round((n as number) * 100) / 100).toBe(n)
}
