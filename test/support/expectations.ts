/** Assertions shared by the black-box tests. */
import { expect } from "vitest"
import type { JsonResponse } from "./server.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** ISO 8601 UTC with a Z suffix (spec 1). */
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

export const isUuid = (s: unknown): boolean => typeof s === "string" && UUID.test(s)

/**
 * The spec's Error body (2.1): exactly `{"error":{"code","message"}}`, JSON content type, and the
 * X-Request-Id every response carries (CONTRACT 6).
 */
export const expectError = (res: JsonResponse, status: number, code: string) => {
  expect({ status: res.status, body: res.json }, res.text).toMatchObject({ status, body: { error: { code } } })
  expect(Object.keys(res.json)).toEqual(["error"])
  expect(Object.keys(res.json.error).sort()).toEqual(["code", "message"])
  expect(typeof res.json.error.message).toBe("string")
  expect(res.json.error.message.length).toBeGreaterThan(0)
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
