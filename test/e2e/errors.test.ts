/**
 * The listeners' answers over real sockets: error shapes of the public listener and the ops
 * listener, the ops endpoints (CONTRACT 2), and real answers, successes and errors, as the OpenAPI
 * document declares them. What the document itself states: openapi-document.test.ts.
 */
import { Predicate } from "effect"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectAdminError } from "../support/admin.js"
import { type Answer, arrayField, codeOf, errorBody, expectError, field, ISO_UTC } from "../support/expectations.js"
import { documentedAnswers } from "../support/openapi.js"
import { findSample, scrapeMetrics, supervisedFibers } from "../support/ops-endpoints.js"
import type { RunningServer } from "../support/server.js"
import { request, setMerchantStatus, startServer } from "../support/server.js"

let server: RunningServer
let merchant: { id: string; apiKey: string }
beforeAll(async () => {
  server = await startServer()
  merchant = await server.createMerchant()
})
afterAll(async () => {
  await server?.stop()
})

/** A GET of any URL as sent. */
const raw = (url: string, init: { headers?: Record<string, string> } = {}) => request(url, init)

/** An error body in the spec's shape, whatever its code: the code. */
const expectErrorShape = (res: Answer & { readonly headers: Headers }, status: number) => {
  expect({ status: res.status, text: res.text }).toMatchObject({ status })
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
  const { code } = errorBody(res)
  expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/)
  expect(res.headers.get("x-request-id") ?? "").not.toBe("")
  return code
}

describe("errors of the public listener", () => {
  it("an unknown route is 404 with the Error body, with or without a key", async () => {
    for (const key of [merchant.apiKey, null]) {
      for (const path of ["/no-such-route", "/balance/extra", `/purchases/${randomUUID()}/extra`]) {
        expectErrorShape(await server.api(path, { key }), 404)
      }
    }
    for (const path of ["/", "/api", "/api/v1/merchant", "/api/v2/merchant/balance"]) {
      expectErrorShape(await raw(`${server.baseUrl}${path}`), 404)
    }
  })

  it("a POST with a malformed JSON body to an unknown route is still a JSON error", async () => {
    const res = await server.api("/buy", { method: "POST", key: merchant.apiKey, body: "{\"item_id\": ", headers: { "content-type": "application/json" } })
    expect(res.status).toBeGreaterThanOrEqual(400)
    expect(res.status).toBeLessThan(500)
    expect(res.json).toBeDefined()
    expect(typeof codeOf(res)).toBe("string")
    expect(res.headers.get("content-type") ?? "").toMatch(/json/)
  })

  it("a known path with another method is 405 MERCHANT_METHOD_NOT_ALLOWED with Allow (it was 404 MERCHANT_NOT_FOUND)", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const res = await server.api("/balance", { method, key: merchant.apiKey, body: {} })
      expectError(res, 405, "MERCHANT_METHOD_NOT_ALLOWED")
      expect(res.headers.get("allow")).toBe("GET, HEAD")
    }
    const purchase = await server.api(`/purchases/${randomUUID()}`, { method: "DELETE", key: merchant.apiKey })
    expectError(purchase, 405, "MERCHANT_METHOD_NOT_ALLOWED")
    expect(purchase.headers.get("allow")).toBe("GET, HEAD")
    const buy = await server.api("/buy", { method: "GET", key: merchant.apiKey })
    expectError(buy, 405, "MERCHANT_METHOD_NOT_ALLOWED")
    expect(buy.headers.get("allow")).toBe("POST")
    // an unknown path stays 404
    expectError(await server.api("/balances", { method: "POST", key: merchant.apiKey, body: {} }), 404, "MERCHANT_NOT_FOUND")
  })

  it("API errors carry exactly the spec code", async () => {
    expectError(await server.api("/balance"), 401, "MERCHANT_API_KEY_MISSING")
    expectError(await server.api("/deposits?limit=0", { key: merchant.apiKey }), 400, "MERCHANT_INVALID_QUERY")
    expectError(await server.api("/deposits?cursor=nope", { key: merchant.apiKey }), 400, "MERCHANT_INVALID_QUERY")
  })
})

describe("ops endpoints", () => {
  it("/health is 200 while the process runs", async () => {
    const res = await raw(`${server.opsUrl}/health`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ status: "ok" })
  })

  it("/ready is 200 with its passing checks", async () => {
    const res = await raw(`${server.opsUrl}/ready`)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ ready: true, checks: { database: { ok: true }, migrations: { ok: true } } })
    const checks = field(res.json, "checks")
    for (const check of Predicate.isRecord(checks) ? Object.values(checks) : []) expect(field(check, "ok")).toBe(true)
  })

  it("an unknown ops route is 404 in the Error shape, with the admin API's code; GET / lists the routes", async () => {
    const unknown = await raw(`${server.opsUrl}/no-such-route`)
    expect(expectErrorShape(unknown, 404)).toBe("ADMIN_NOT_FOUND")
    const index = await raw(`${server.opsUrl}/`)
    expect(index.status).toBe(200)
    const listed = arrayField(index.json, "endpoints").map((e) => field(e, "path"))
    expect(listed).toEqual(expect.arrayContaining(["/health", "/ready", "/metrics", "/ops/fibers", "/admin/*"]))
    // every listed GET route answers
    for (const path of ["/health", "/metrics", "/ops/fibers"]) expect((await raw(`${server.opsUrl}${path}`)).status, path).toBe(200)
  })

  it("an unknown route under /admin is 404 in the Error shape, with the admin token", async () => {
    const res = await server.admin("/admin/no-such-route")
    expectAdminError(res, 404)
    expect(res.headers.get("x-request-id") ?? "").not.toBe("")
  })

  describe("/metrics", () => {
    it("counts HTTP requests by server, method, route and status", async () => {
      const balance = () => server.merchant(merchant.apiKey).call((client) => client.balance.getBalance())
      await balance()
      const before = await scrapeMetrics(server)
      const labels = { server: "api", method: "GET", route: "/api/v1/merchant/balance", status: "200" }
      const was = findSample(before.samples, "http_requests_total", labels)?.value ?? 0
      expect(was).toBeGreaterThanOrEqual(1)

      await balance()
      await server.api("/balance")
      await server.api("/deposits?limit=0&cursor=zzz", { key: merchant.apiKey })
      const after = await scrapeMetrics(server)
      expect(findSample(after.samples, "http_requests_total", labels)?.value).toBe(was + 1)
      expect(findSample(after.samples, "http_requests_total", { ...labels, status: "401" })?.value).toBeGreaterThanOrEqual(1)
      // The query string is not part of the route label.
      expect(findSample(after.samples, "http_requests_total", { server: "api", route: "/api/v1/merchant/deposits", status: "400" })?.value)
        .toBeGreaterThanOrEqual(1)
      expect(after.text).not.toMatch(/route="[^"]*\?/)
      // Latency too, with the same labels.
      expect(findSample(after.samples, "http_request_duration_seconds_count", labels)?.value).toBeGreaterThanOrEqual(2)
      // The ops listener is counted as its own server.
      expect(findSample(after.samples, "http_requests_total", { server: "ops", method: "GET", route: "/metrics", status: "200" })?.value)
        .toBeGreaterThanOrEqual(1)
    })

    it("folds ids in paths so labels stay bounded", async () => {
      const id = randomUUID()
      await server.api(`/purchases/${id}`, { key: merchant.apiKey })
      await server.adminApi.call((client) => client.merchants.getMerchant({ path: { id: merchant.id } }))
      const { text, samples } = await scrapeMetrics(server)
      expect(text).not.toContain(id)
      expect(text).not.toContain(merchant.id)
      expect(findSample(samples, "http_requests_total", { server: "api", route: "/api/v1/merchant/purchases/:id" })).toBeDefined()
      expect(findSample(samples, "http_requests_total", { server: "ops", route: "/admin/merchants/:id", status: "200" })).toBeDefined()
    })

    it("labels a path no route matches `unmatched`, so made-up paths add no series; a route's other spellings count as the route", async () => {
      const marker = `made-up-${randomUUID().slice(0, 8)}`
      for (let i = 0; i < 5; i++) {
        await raw(`${server.baseUrl}/${marker}-${i}`)
        await raw(`${server.opsUrl}/${marker}-${i}`)
        await server.api(`/${marker}/${i}`, { key: merchant.apiKey })
      }
      const before = (await scrapeMetrics(server)).samples
      const upper = findSample(before, "http_requests_total", { server: "api", method: "GET", route: "/api/v1/merchant/balance", status: "200" })?.value ?? 0
      expect((await raw(`${server.baseUrl}/api/v1/merchant/BALANCE`, { headers: { authorization: `Bearer ${merchant.apiKey}` } })).status).toBe(200)
      const { text, samples } = await scrapeMetrics(server)
      expect(text).not.toContain(marker)
      expect(findSample(samples, "http_requests_total", { server: "api", route: "unmatched", status: "404" })?.value).toBeGreaterThanOrEqual(10)
      expect(findSample(samples, "http_requests_total", { server: "ops", route: "unmatched", status: "404" })?.value).toBeGreaterThanOrEqual(5)
      expect(findSample(samples, "http_requests_total", { server: "api", method: "GET", route: "/api/v1/merchant/balance", status: "200" })?.value).toBe(
        upper + 1
      )
    })

    it("reports Effect fiber counters and every supervised fiber's restarts", async () => {
      const { samples } = await scrapeMetrics(server)
      expect(findSample(samples, "effect_fibers", { kind: "started" })?.value).toBeGreaterThan(0)
      expect(findSample(samples, "effect_fibers", { kind: "active" })?.value).toBeGreaterThan(0)
      const restarts = samples.filter((s) => s.name === "supervised_fiber_restarts_total")
      expect(restarts.map((s) => s.labels["fiber"])).toContain("merchant-auth-invalidation")
      expect(findSample(samples, "supervised_fiber_restarts_total", { fiber: "merchant-auth-invalidation" })?.value).toBe(0)
    })
  })

  describe("/ops/fibers", () => {
    it("lists each supervised fiber with name, state, restarts, last error and last heartbeat", async () => {
      const list = await supervisedFibers(server)
      expect(list.length).toBeGreaterThan(0)
      for (const fiber of list) {
        expect(Object.keys(fiber)).toEqual(expect.arrayContaining(["name", "state", "restarts", "last_error", "last_heartbeat"]))
        expect(typeof fiber["name"]).toBe("string")
        expect(["starting", "running", "restarting", "stopped"]).toContain(fiber["state"])
        expect(Number.isInteger(fiber["restarts"])).toBe(true)
        expect(fiber["last_error"] === null || typeof fiber["last_error"] === "string").toBe(true)
        expect(fiber["last_heartbeat"] === null || ISO_UTC.test(String(fiber["last_heartbeat"]))).toBe(true)
      }
      expect(new Set(list.map((f) => f["name"])).size).toBe(list.length)
      expect(list.find((f) => f["name"] === "merchant-auth-invalidation")).toMatchObject({
        state: "running",
        restarts: 0,
        last_error: null
      })
    })

    it("the auth-invalidation listener beats when a merchant changes", async () => {
      const heartbeat = async () => (await supervisedFibers(server)).find((f) => f["name"] === "merchant-auth-invalidation")?.["last_heartbeat"] ?? null
      const before = await heartbeat()
      const m = await server.createMerchant()
      await setMerchantStatus(server, m.id, "inactive")
      // The notification arrives asynchronously: poll (up to about 10 s) for the new beat.
      let beat = await heartbeat()
      for (let i = 0; i < 100 && beat === before; i++) {
        await new Promise((r) => setTimeout(r, 100))
        beat = await heartbeat()
      }
      expect(String(beat)).toMatch(ISO_UTC)
      if (before !== null) expect(Date.parse(String(beat))).toBeGreaterThan(Date.parse(String(before)))
    })
  })
})

describe("answers as the OpenAPI document declares them", () => {
  let doc: any
  beforeAll(async () => {
    const res = await raw(`${server.baseUrl}/api/v1/merchant/openapi.json`)
    expect(res.status).toBe(200)
    doc = res.json
  })

  it("real responses, successes and errors, are what the document declares for their status and media type", async () => {
    const check = documentedAnswers(server, doc, merchant.apiKey)
    await server.deposit(merchant.id, 100)
    await check("GET", "/balance")
    await check("GET", "/deposits")
    await check("GET", "/deposits/fees")
    const items = (await check("GET", "/items?limit=3")).items
    await check("GET", `/items/search?market_hash_name=${encodeURIComponent(items[0].market_hash_name)}`)
    const tradeUrl = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
    const cheapest = (await check("GET", "/items?limit=1&sort=price_asc")).items[0]
    const bought = await check("POST", "/buy", {
      body: { item_id: cheapest.id, max_price: cheapest.price, custom_id: `oa-${randomUUID()}`, target_trade_url: tradeUrl }
    })
    await check("GET", `/purchases/${bought.purchase_id}`)
    await check("GET", "/purchases")
    await check("GET", "/webhook-events")
    // errors: a field's code, problem details, 401, 404, 402
    await check("POST", "/buy", { body: { item_id: "nope", max_price: 1, custom_id: "x", target_trade_url: tradeUrl } })
    await check("POST", "/buy", { raw: "{not json" })
    await check("POST", "/buy-by-name", { raw: "" })
    await check("GET", "/balance", { key: null })
    await check("GET", `/purchases/${randomUUID()}`)
    await check("GET", "/items?limit=0")
    await check("GET", "/items?sort=sideways")
    // the buys that answer through the handlers' own bodies: 200 or 202, and PurchaseFailedResponse
    // (a private inventory is rejected before the offer; whichever answer comes is checked)
    const rejectedUrl = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=private0"
    const [second, ...others] = (await check("GET", "/items?limit=8&sort=price_asc")).items.slice(1)
    await check("POST", "/buy-sync", { body: { item_id: second.id, max_price: second.price, custom_id: `oa-${randomUUID()}`, target_trade_url: tradeUrl } })
    // the simulator's churn may delist or reprice an item between the list and the buy: the next one then
    for (const item of others) {
      const rejected = await check("POST", "/buy-sync", {
        body: { item_id: item.id, max_price: item.price, custom_id: `oa-${randomUUID()}`, target_trade_url: rejectedUrl }
      })
      const code = rejected.error?.code
      if (code === "MERCHANT_ITEM_UNAVAILABLE" || code === "MERCHANT_PRICE_CHANGED") continue
      if (code !== undefined && code !== "MERCHANT_INSUFFICIENT_BALANCE") {
        expect(rejected).toMatchObject({ error: { code: "MERCHANT_PURCHASE_FAILED" }, failure: { code: "INVENTORY_PRIVATE" } })
      }
      break
    }
    await check("POST", "/buy-by-name", {
      body: { market_hash_name: items[0].market_hash_name, max_price: 1_000_000, custom_id: `oa-${randomUUID()}`, trade_url: tradeUrl }
    })
    await check("POST", "/buy-by-name", {
      body: { market_hash_name: `no such item ${randomUUID()}`, max_price: 1, custom_id: `oa-${randomUUID()}`, trade_url: tradeUrl }
    })
    const dear = (await check("GET", "/items?limit=1&sort=price_desc")).items[0]
    await check("POST", "/buy", { body: { item_id: dear.id, max_price: dear.price, custom_id: `oa-${randomUUID()}`, target_trade_url: tradeUrl } })
  })
})
