/**
 * Authentication over real sockets (spec 5, 7.2; CONTRACT 2 and 6): the 401 matrix, key rotation,
 * merchant status, rate-limit headers, X-Request-Id, the per-merchant rate limit and the
 * per-address budget of failed authentications.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Balance } from "../../src/Merchants/Api.js"
import { bodyOf, expectError, rateLimitHeaders } from "../support/expectations.js"
import { type JsonResponse, type RunningServer, setMerchantStatus, startServer } from "../support/server.js"

/** A well-formed key (prefix + 32 base64url characters) that was never issued. */
const UNKNOWN_KEY = "mer_live_" + "A".repeat(32)

const withAuthorization = (server: RunningServer, authorization: string, path = "/balance") => server.api(path, { headers: { authorization } })

describe("authentication", () => {
  let server: RunningServer
  let merchant: { id: string; apiKey: string }
  beforeAll(async () => {
    server = await startServer()
    merchant = await server.createMerchant()
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("a valid Bearer key is accepted", async () => {
    const res = await server.api("/balance", { key: merchant.apiKey })
    expect(res.status).toBe(200)
    expect(bodyOf(res, Balance).currency).toBe("USD")
  })

  it("every missing, malformed, unknown or foreign credential is 401 MERCHANT_API_KEY_MISSING with byte-identical bodies", async () => {
    const valid = merchant.apiKey
    const attempts: Array<[string, Promise<JsonResponse>]> = [
      ["no header", server.api("/balance")],
      ["empty header", withAuthorization(server, "")],
      ["Bearer with nothing", withAuthorization(server, "Bearer")],
      ["Bearer and spaces", withAuthorization(server, "Bearer    ")],
      ["Basic with a valid key", withAuthorization(server, `Basic ${valid}`)],
      ["Basic credentials", withAuthorization(server, `Basic ${Buffer.from(`user:${valid}`).toString("base64")}`)],
      ["Token scheme", withAuthorization(server, `Token ${valid}`)],
      ["key without a scheme", withAuthorization(server, valid)],
      ["key without its prefix", withAuthorization(server, `Bearer ${valid.slice("mer_live_".length)}`)],
      ["wrong prefix", withAuthorization(server, `Bearer mer_test_${valid.slice("mer_live_".length)}`)],
      ["truncated key", withAuthorization(server, `Bearer ${valid.slice(0, -1)}`)],
      ["extended key", withAuthorization(server, `Bearer ${valid}A`)],
      ["key and junk", withAuthorization(server, `Bearer ${valid} junk`)],
      ["two keys", withAuthorization(server, `Bearer ${valid}, Bearer ${valid}`)],
      ["malformed key", withAuthorization(server, "Bearer not-a-key")],
      ["malformed characters", withAuthorization(server, `Bearer mer_live_${"!".repeat(32)}`)],
      ["unknown well-formed key", withAuthorization(server, `Bearer ${UNKNOWN_KEY}`)],
      ["key in the query string", server.api(`/balance?api_key=${valid}`)],
      ["key in a cookie", server.api("/balance", { headers: { cookie: `api_key=${valid}` } })]
    ]
    const results = await Promise.all(attempts.map(async ([label, res]) => [label, await res] as const))
    const reference = results[0]![1]
    for (const [label, res] of results) {
      expect({ label, status: res.status }).toEqual({ label, status: 401 })
      expectError(res, 401, "MERCHANT_API_KEY_MISSING")
      expect({ label, body: res.text }).toEqual({ label, body: reference.text })
    }
  })

  it("the 401 is the same on every merchant endpoint", async () => {
    const bodies = await Promise.all(["/balance", "/deposits", "/deposits/fees", "/deposits?limit=abc"].map(async (path) => {
      const res = await withAuthorization(server, `Bearer ${UNKNOWN_KEY}`, path)
      expectError(res, 401, "MERCHANT_API_KEY_MISSING")
      return res.text
    }))
    expect(new Set(bodies).size).toBe(1)
  })

  it("the auth scheme is matched case-insensitively (RFC 9110 section 11.1)", async () => {
    for (const scheme of ["bearer", "BEARER", "BeArEr"]) {
      const res = await withAuthorization(server, `${scheme} ${merchant.apiKey}`)
      expect({ scheme, status: res.status }).toEqual({ scheme, status: 200 })
    }
  })

  it("a 401 carries a Bearer challenge in WWW-Authenticate (RFC 9110 section 15.5.2)", async () => {
    for (const res of [await server.api("/balance"), await withAuthorization(server, `Bearer ${UNKNOWN_KEY}`)]) {
      expect(res.status).toBe(401)
      expect(res.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/i)
    }
  })

  it("rotating the key revokes the previous one at once; the new one works", async () => {
    const m = await server.createMerchant()
    expect((await server.api("/balance", { key: m.apiKey })).status).toBe(200) // now cached as valid
    const rotate = () => server.adminApi.call((client) => client.merchants.rotateApiKey({ path: { id: m.id } }))
    const newKey = (await rotate()).api_key
    expect(newKey).toMatch(/^mer_live_[A-Za-z0-9_-]{32}$/)
    expect(newKey).not.toBe(m.apiKey)

    const old = await server.api("/balance", { key: m.apiKey })
    expectError(old, 401, "MERCHANT_API_KEY_MISSING")
    expect(old.text).toBe((await server.api("/balance")).text)
    expect((await server.api("/balance", { key: newKey })).status).toBe(200)

    // A second rotation revokes the first replacement as well.
    const again = await rotate()
    expect((await server.api("/balance", { key: newKey })).status).toBe(401)
    expect((await server.api("/balance", { key: m.apiKey })).status).toBe(401)
    expect((await server.api("/balance", { key: again.api_key })).status).toBe(200)
    // Other merchants' keys are untouched.
    expect((await server.api("/balance", { key: merchant.apiKey })).status).toBe(200)
  })

  it("a blocked merchant gets 403 MERCHANT_BLOCKED on every merchant endpoint, with rate-limit headers; unblocking restores access", async () => {
    const m = await server.createMerchant()
    expect((await server.api("/balance", { key: m.apiKey })).status).toBe(200)
    expect((await setMerchantStatus(server, m.id, "blocked")).status).toBe("blocked")

    for (const path of ["/balance", "/deposits", "/deposits/fees", "/deposits?limit=0"]) {
      const res = await server.api(path, { key: m.apiKey })
      expectError(res, 403, "MERCHANT_BLOCKED")
      rateLimitHeaders(res)
    }
    // A blocked merchant's wrong key is still a 401: blocking reveals nothing to a stranger.
    expectError(await server.api("/balance", { key: UNKNOWN_KEY }), 401, "MERCHANT_API_KEY_MISSING")

    expect((await setMerchantStatus(server, m.id, "active")).status).toBe("active")
    const res = await server.api("/balance", { key: m.apiKey })
    expect(res.status).toBe(200)
  })

  it("an inactive merchant can still read balance, deposits and fees", async () => {
    const m = await server.createMerchant()
    expect((await setMerchantStatus(server, m.id, "inactive")).status).toBe("inactive")
    for (const path of ["/balance", "/deposits", "/deposits/fees"]) {
      const res = await server.api(path, { key: m.apiKey })
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      rateLimitHeaders(res)
    }
  })

  it("authenticated responses carry X-RateLimit-Limit and X-RateLimit-Remaining, whatever their status", async () => {
    const m = await server.createMerchant()
    const ok = await server.api("/balance", { key: m.apiKey })
    expect(ok.status).toBe(200)
    const first = rateLimitHeaders(ok)
    expect(first.limit).toBe(100) // RATE_LIMIT_BURST default
    expect(first.remaining).toBe(99)

    const invalid = await server.api("/deposits?limit=0", { key: m.apiKey })
    expectError(invalid, 400, "MERCHANT_INVALID_QUERY")
    const second = rateLimitHeaders(invalid)
    expect(second.limit).toBe(100)
    expect(second.remaining).toBeLessThan(100)

    const fees = await server.api("/deposits/fees", { key: m.apiKey })
    expect(rateLimitHeaders(fees).limit).toBe(100)
  })

  it("every response carries an X-Request-Id, unique per request, echoing a well-formed incoming one", async () => {
    const responses = [
      await server.api("/balance", { key: merchant.apiKey }), // 200
      await server.api("/balance"), // 401
      await server.api("/no-such-route", { key: merchant.apiKey }), // 404
      await server.api("/no-such-route"), // 404 without a key
      await server.api("/deposits?limit=201", { key: merchant.apiKey }) // 400
    ]
    expect(responses.map((r) => r.status)).toEqual([200, 401, 404, 404, 400])
    const ids = responses.map((r) => r.headers.get("x-request-id"))
    for (const id of ids) expect(id ?? "").toMatch(/^[A-Za-z0-9._:-]{8,128}$/)
    expect(new Set(ids).size).toBe(ids.length)

    const echoed = await server.api("/balance", { key: merchant.apiKey, headers: { "x-request-id": "client-trace.42:abc" } })
    expect(echoed.headers.get("x-request-id")).toBe("client-trace.42:abc")
    const echoed401 = await server.api("/balance", { headers: { "x-request-id": "client-trace-401" } })
    expect(echoed401.headers.get("x-request-id")).toBe("client-trace-401")
    // Not echoed when it could inject into logs: replaced by a fresh id.
    const unsafe = await server.api("/balance", { key: merchant.apiKey, headers: { "x-request-id": "a b<script>" } })
    expect(unsafe.headers.get("x-request-id")).not.toBe("a b<script>")
    expect(unsafe.headers.get("x-request-id") ?? "").toMatch(/^[0-9a-f-]{36}$/)
  })
})

describe("rate limits", () => {
  // A slow refill keeps the burst window deterministic however slow the machine is:
  // one token back every 20 s, one failed-auth token every 100 s.
  const RPS = 0.05
  const BURST = 5
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer({
      env: {
        RATE_LIMIT_RPS: String(RPS),
        RATE_LIMIT_BURST: String(BURST),
        AUTH_FAILURE_BURST: "3",
        AUTH_FAILURE_RPS: "0.01"
      }
    })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("a merchant gets its burst, then 429 MERCHANT_RATE_LIMITED with Retry-After and X-RateLimit headers", async () => {
    const m = await server.createMerchant()
    const paths = ["/balance", "/deposits/fees", "/deposits", "/balance", "/deposits?limit=0"] // one shared budget
    const remaining: Array<number> = []
    for (const path of paths) {
      const res = await server.api(path, { key: m.apiKey })
      expect(res.status).not.toBe(429)
      const headers = rateLimitHeaders(res)
      expect(headers.limit).toBe(BURST)
      remaining.push(headers.remaining)
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0])

    const limited = await server.api("/balance", { key: m.apiKey })
    expectError(limited, 429, "MERCHANT_RATE_LIMITED")
    const retryAfter = limited.headers.get("retry-after")
    expect(retryAfter).toMatch(/^\d+$/)
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
    expect(Number(retryAfter)).toBeLessThanOrEqual(Math.ceil(1 / RPS))
    expect(rateLimitHeaders(limited)).toEqual({ limit: BURST, remaining: 0 })

    // Still limited on another endpoint, and the wait does not shrink to 0.
    const again = await server.api("/deposits/fees", { key: m.apiKey })
    expectError(again, 429, "MERCHANT_RATE_LIMITED")
    expect(Number(again.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)

    // Another merchant has its own budget.
    const other = await server.createMerchant()
    const res = await server.api("/balance", { key: other.apiKey })
    expect(res.status).toBe(200)
    expect(rateLimitHeaders(res)).toEqual({ limit: BURST, remaining: BURST - 1 })
  })

  // Runs last in this file's server: it locks out 127.0.0.1 for about 100 s.
  it("after the failed-auth budget of an address, keys not known valid get 429 with Retry-After before any lookup; a key known valid a moment ago still works", async () => {
    const known = await server.createMerchant()
    const unknownToThisProcess = await server.createMerchant()
    for (let i = 0; i < 3; i++) {
      // `known` authenticates just before the budget runs out: its key is in the process's cache
      if (i === 2) expect((await server.api("/balance", { key: known.apiKey })).status).toBe(200)
      expectError(await server.api("/balance", { key: UNKNOWN_KEY }), 401, "MERCHANT_API_KEY_MISSING")
    }
    const bad = await server.api("/balance", { key: UNKNOWN_KEY })
    expectError(bad, 429, "MERCHANT_RATE_LIMITED")
    expect(bad.headers.get("retry-after")).toMatch(/^\d+$/)
    expect(Number(bad.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)

    // The address budget is checked before any lookup (src/Merchants/Authentication.ts): a valid key
    // this process has not seen lately is refused too, and so is a missing one.
    const notLookedUp = await server.api("/balance", { key: unknownToThisProcess.apiKey })
    expectError(notLookedUp, 429, "MERCHANT_RATE_LIMITED")
    expect(Number(notLookedUp.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    const missing = await server.api("/balance")
    expectError(missing, 429, "MERCHANT_RATE_LIMITED")
    // a key known valid a moment ago is not locked out with the address (the cache keeps it about 2 s)
    const stillWorks = await server.api("/balance", { key: known.apiKey })
    expect(stillWorks.status).toBe(200)
  })

  it("the failed-auth 429 carries X-RateLimit-Limit and X-RateLimit-Remaining like every 429 (spec 7.2)", async () => {
    // The address is locked by the previous test; make sure regardless.
    let res = await server.api("/balance", { key: UNKNOWN_KEY })
    for (let i = 0; i < 3 && res.status === 401; i++) res = await server.api("/balance", { key: UNKNOWN_KEY })
    expectError(res, 429, "MERCHANT_RATE_LIMITED")
    expect(rateLimitHeaders(res)).toEqual({ limit: 3, remaining: 0 })
  })
})
