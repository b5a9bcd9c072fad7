/**
 * The fast handler of GET /balance, /items and /items/search (src/FastLane.ts) over real sockets:
 * a merchant's first request goes through HttpApi (its key is not cached yet), the next ones
 * through the fast handler, and both must answer alike; what it declines before authenticating (a
 * query that does not decode) is answered by HttpApi, and what it takes (a blocked merchant, a
 * revoked key, an empty bucket) it answers with the middleware's bytes.
 */
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import { once } from "node:events"
import { Agent } from "node:http"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ItemPage, SearchResults } from "../../src/Catalogue/Api.js"
import { Balance } from "../../src/Merchants/Api.js"
import { deleteItem, putItems, simpleItem } from "../support/catalogue.js"
import { bodyOf, expectError } from "../support/expectations.js"
import { comparable, getOnAgent, pipelinedBodies, reencode, remaining } from "../support/fast-lane.js"
import type { JsonResponse, RunningServer } from "../support/server.js"
import { fastLaneAnswers, setMerchantStatus, startServer } from "../support/server.js"

const BURST = 6
let server: RunningServer
beforeAll(async () => {
  server = await startServer({
    env: { SIM_CHURN_PER_SECOND: "0", SIM_CATALOGUE_SIZE: "300", RATE_LIMIT_RPS: "0.01", RATE_LIMIT_BURST: String(BURST) }
  })
})
afterAll(async () => {
  await server?.stop()
})

const fastAnswers = (route: string) => fastLaneAnswers(server, route)

const routes = [
  "/balance",
  "/items?limit=7",
  "/items?limit=5&sort=price_desc&min_price=0.5",
  "/items/search?market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)&limit=3"
]

describe("fast lane", () => {
  for (const path of routes) {
    it(`answers ${path} exactly as HttpApi does, counting it in the fast-lane metric`, async () => {
      const m = await server.createMerchant()
      await server.deposit(m.id, 102.5)
      const route = path.split("?")[0]!
      // lists must page: the catalogue has items, and a walk's next page is a fast-lane request too
      const before = await fastAnswers(route)
      const viaHttpApi = await server.api(path, { key: m.apiKey })
      const afterFirst = await fastAnswers(route)
      const viaFastLane = await server.api(path, { key: m.apiKey })
      const afterSecond = await fastAnswers(route)

      expect(viaHttpApi.status).toBe(200)
      expect(comparable(viaFastLane)).toEqual(comparable(viaHttpApi))
      expect(remaining(viaFastLane)).toBe(remaining(viaHttpApi) - 1)
      expect(viaFastLane.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
      expect(viaFastLane.headers.get("x-request-id")).not.toBe(viaHttpApi.headers.get("x-request-id"))
      // the first request of a key is never the fast lane's (its key was not cached)
      expect(afterFirst).toBe(before)
      // the balance reads PostgreSQL directly; on PGlite it is what the first request kept
      expect(afterSecond).toBe(before + 1)
      if (route === "/balance") expect(bodyOf(viaFastLane, Balance).available).toBe(101.47)
      if (route === "/items") expect(bodyOf(viaFastLane, ItemPage).items.length).toBeGreaterThan(0)
      if (route === "/items/search") expect(Array.isArray(bodyOf(viaFastLane, SearchResults).results)).toBe(true)
      // the pre-serialised bytes are the success schema's encoding of what they say, byte for byte
      // (characters beyond ASCII as \u escapes, as items are stored: Domain/CatalogItem.ts)
      expect(reencode[route]!(viaFastLane.text)).toBe(viaFastLane.text)
    })
  }

  it("answers GET /balance after a deposit with the new balance, never one it answered before", async () => {
    const m = await server.createMerchant()
    await server.deposit(m.id, 10)
    const balanceAnswers = async () => bodyOf(await server.api("/balance", { key: m.apiKey }), Balance).available
    expect(await balanceAnswers()).toBe(9.9)
    const before = await fastAnswers("/balance")
    expect(await balanceAnswers()).toBe(9.9)
    expect(await fastAnswers("/balance")).toBe(before + 1)
    await server.deposit(m.id, 20)
    expect(await balanceAnswers()).toBe(29.7)
    expect(await balanceAnswers()).toBe(29.7)
    // on PGlite the first after the deposit reads it again (the kept balance was dropped), and keeps it for the second
    expect(await fastAnswers("/balance")).toBe(before + 3)
  })

  it("keeps a reasonable X-Request-Id and replaces any other", async () => {
    const m = await server.createMerchant()
    await server.api("/items?limit=1", { key: m.apiKey })
    const kept = await server.api("/items?limit=1", { key: m.apiKey, headers: { "x-request-id": "trace-42.a:b_c" } })
    expect(kept.headers.get("x-request-id")).toBe("trace-42.a:b_c")
    const replaced = await server.api("/items?limit=1", { key: m.apiKey, headers: { "x-request-id": "no spaces allowed" } })
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("leaves errors to HttpApi: a bad query on a cached key gets the spec's error and costs one token", async () => {
    const m = await server.createMerchant()
    const first = await server.api("/items?limit=1", { key: m.apiKey })
    const before = await fastAnswers("/items")
    const bad = await server.api("/items?limit=0", { key: m.apiKey })
    expectError(bad, 400, "MERCHANT_INVALID_QUERY")
    expect(remaining(bad)).toBe(remaining(first) - 1)
    const wrongSort = await server.api("/items?sort=cheapest", { key: m.apiKey })
    expectError(wrongSort, 400, "MERCHANT_INVALID_SORT")
    const repeated = await server.api("/items/search?market_hash_name=a&market_hash_name=b", { key: m.apiKey })
    expectError(repeated, 400, "MERCHANT_INVALID_QUERY")
    expect(remaining(repeated)).toBe(remaining(first) - 3)
    expect(await fastAnswers("/items")).toBe(before)
  })

  it("refuses a cached key at once when its merchant is blocked or the key is rotated; serves an inactive merchant's reads", async () => {
    const blocked = await server.createMerchant()
    expect((await server.api("/balance", { key: blocked.apiKey })).status).toBe(200)
    expect((await server.api("/items?limit=1", { key: blocked.apiKey })).status).toBe(200)
    await setMerchantStatus(server, blocked.id, "blocked")
    for (const path of ["/balance", "/items?limit=1"]) expectError(await server.api(path, { key: blocked.apiKey }), 403, "MERCHANT_BLOCKED")

    const inactive = await server.createMerchant()
    await server.api("/items?limit=1", { key: inactive.apiKey })
    await setMerchantStatus(server, inactive.id, "inactive")
    expect((await server.api("/items?limit=1", { key: inactive.apiKey })).status).toBe(200)

    const rotated = await server.createMerchant()
    await server.api("/balance", { key: rotated.apiKey })
    await server.api("/balance", { key: rotated.apiKey })
    const next = await server.adminApi.call((client) => client.merchants.rotateApiKey({ path: { id: rotated.id } }))
    for (const path of ["/balance", "/items?limit=1"]) expectError(await server.api(path, { key: rotated.apiKey }), 401, "MERCHANT_API_KEY_MISSING")
    expect((await server.api("/balance", { key: next.api_key })).status).toBe(200)
  })

  it("on one kept-alive connection, answers each request by its own key: another merchant's, a rotated one, a malformed one", async () => {
    // the fast lane remembers a connection's last key by its header; a different header must be read anew
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const ports = new Set<number>()
    const balanceOn = async (key: string) => {
      const answer = await getOnAgent(agent, `${server.baseUrl}/api/v1/merchant/balance`, key)
      ports.add(answer.localPort)
      return answer
    }
    const available = (answer: { status: number; text: string }) =>
      answer.status === 200 ? Schema.decodeUnknownSync(Balance)(JSON.parse(answer.text)).available : answer.text
    const a = await server.createMerchant()
    const b = await server.createMerchant()
    await server.deposit(a.id, 10)
    await server.deposit(b.id, 20)
    const before = await fastAnswers("/balance")
    try {
      expect(available(await balanceOn(a.apiKey))).toBe(9.9) // HttpApi: the key is read into the cache
      expect(available(await balanceOn(a.apiKey))).toBe(9.9) // the fast lane, which remembers the connection's key
      expect(available(await balanceOn(b.apiKey))).toBe(19.8)
      expect(available(await balanceOn(b.apiKey))).toBe(19.8)
      expect(available(await balanceOn(a.apiKey))).toBe(9.9)
      const rotated = await server.adminApi.call((client) => client.merchants.rotateApiKey({ path: { id: a.id } }))
      expect(await balanceOn(a.apiKey)).toMatchObject({ status: 401 })
      expect(await balanceOn(`${a.apiKey.slice(0, -1)}!`)).toMatchObject({ status: 401 })
      expect(available(await balanceOn(rotated.api_key))).toBe(9.9)
    } finally {
      agent.destroy()
    }
    expect(ports.size).toBe(1)
    expect(await fastAnswers("/balance")).toBe(before + 3)
  })

  it("answers many concurrent list and search requests each with its own page, intact (page buffers are reused)", async () => {
    const pages = ["/items?limit=100", "/items?limit=3&sort=price_desc", "/items/search?market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)&limit=50"]
    const merchants = await Promise.all(Array.from({ length: 30 }, () => server.createMerchant()))
    // each merchant's first request warms its key through HttpApi: those bodies are the expected ones
    const expected = await Promise.all(merchants.map((m, i) => server.api(pages[i % pages.length]!, { key: m.apiKey })))
    const before = await fastAnswers("/items")
    const answers = await Promise.all(merchants.flatMap((m) =>
      Array.from({ length: BURST - 1 }, (_, j) => {
        const page = (j + merchants.indexOf(m)) % pages.length
        return server.api(pages[page]!, { key: m.apiKey }).then((res) => ({ page, res }))
      })
    ))
    for (const { page, res } of answers) {
      expect(res.status).toBe(200)
      expect(res.text).toBe(expected[page]!.text)
      expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(expected[page]!.text)))
    }
    expect(await fastAnswers("/items")).toBeGreaterThan(before + answers.length / 2)
  })

  it("keeps a slow client's queued pages intact while other requests reuse page buffers", async () => {
    // One connection sends many pipelined requests and reads nothing for a while: their pages
    // (about 80 KB each) fill the socket's kernel buffers, and the rest wait in node holding the
    // lent buffers. Meanwhile other clients' requests take buffers from the pool. A buffer given
    // back before its bytes left would show here as another page's bytes.
    const page = "/items?limit=100"
    const other = "/items?limit=100&sort=price_desc"
    const slow = await Promise.all(Array.from({ length: 100 }, () => server.createMerchant()))
    const busy = await Promise.all(Array.from({ length: 10 }, () => server.createMerchant()))
    const expected = (await server.api(page, { key: slow[0]!.apiKey })).text
    for (const m of slow.slice(1)) await server.api(page, { key: m.apiKey })
    const expectedOther = (await server.api(other, { key: busy[0]!.apiKey })).text
    for (const m of busy.slice(1)) await server.api(other, { key: m.apiKey })

    const socket = connect(Number(new URL(server.baseUrl).port), "127.0.0.1")
    await once(socket, "connect")
    socket.pause()
    const pipelined = slow.flatMap((m) => Array.from({ length: BURST - 1 }, () => m.apiKey))
    socket.write(pipelined.map((key) => `GET /api/v1/merchant${page} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`).join(""))
    await new Promise((resolve) => setTimeout(resolve, 300))
    const others = await Promise.all(busy.flatMap((m) => Array.from({ length: BURST - 1 }, () => server.api(other, { key: m.apiKey }))))
    for (const res of others) expect(res.text).toBe(expectedOther)

    const bodies = await pipelinedBodies(socket, pipelined.length)
    socket.destroy()
    expect(expected.length).toBeGreaterThan(50_000)
    for (const body of bodies) expect(body === expected).toBe(true)
  })

  it("answers a repeated URL from the live catalogue: an item deleted after the first request is gone from the next", async () => {
    const m = await server.createMerchant()
    const path = "/items?limit=20&sort=price_asc"
    await server.api(path, { key: m.apiKey })
    const ids = (res: JsonResponse) => bodyOf(res, ItemPage).items.map((item) => item.id)
    const [victim, runnerUp] = ids(await server.api(path, { key: m.apiKey }))
    await deleteItem(server, victim!)
    let next = await server.api(path, { key: m.apiKey })
    for (let tries = 0; tries < 2 && ids(next)[0] === victim; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      next = await server.api(path, { key: m.apiKey })
    }
    expect(next.status).toBe(200)
    expect(ids(next)).not.toContain(victim)
    expect(ids(next)[0]).toBe(runnerUp)
  })

  it("answers a repeated search from the live catalogue: a price change and a new item show in the next answer", async () => {
    const name = `Cache Probe | ${randomUUID()} (Field-Tested)`
    const [first] = await putItems(server, [simpleItem(randomUUID(), 500, name)])
    const m = await server.createMerchant()
    const path = `/items/search?market_hash_name=${encodeURIComponent(name)}`
    const prices = (res: JsonResponse) => bodyOf(res, SearchResults).results.map((item) => [item.id, item.price])
    let seen = await server.api(path, { key: m.apiKey })
    for (let tries = 0; tries < 3 && prices(seen).length === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      seen = await server.api(path, { key: m.apiKey })
    }
    expect(prices(seen)).toEqual([[first, 5]])
    // the same answer again, now from the fast lane
    expect((await server.api(path, { key: m.apiKey })).text).toBe(seen.text)
    const second = randomUUID()
    await putItems(server, [simpleItem(first!, 300, name), simpleItem(second, 400, name)])
    let next = await server.api(path, { key: m.apiKey })
    for (let tries = 0; tries < 2 && prices(next).length < 2; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      next = await server.api(path, { key: m.apiKey })
    }
    expect(prices(next)).toEqual([[first, 3], [second, 4]])
  })

  it("answers a cached key's refusal itself, with the middleware's bytes (one authentication for both paths)", async () => {
    // a status change empties the key cache, so a cached key's refusal is its spent bucket
    const spent = await server.createMerchant()
    for (let i = 0; i < BURST; i++) expect((await server.api("/items?limit=1", { key: spent.apiKey })).status).toBe(200)
    const before = await fastAnswers("/items")
    const viaFastLane = await server.api("/items?limit=1", { key: spent.apiKey })
    expect(await fastAnswers("/items")).toBe(before + 1)
    // /deposits has no fast route: the middleware answers it
    const viaMiddleware = await server.api("/deposits", { key: spent.apiKey })
    expect(await fastAnswers("/items")).toBe(before + 1)
    expectError(viaFastLane, 429, "MERCHANT_RATE_LIMITED")
    expect(comparable(viaFastLane)).toEqual(comparable(viaMiddleware))
    expect(viaFastLane.headers.get("retry-after")).toBe(viaMiddleware.headers.get("retry-after"))
    expect(remaining(viaFastLane)).toBe(0)
  })

  it("shares the merchant's bucket with HttpApi: the burst, then 429 with Retry-After", async () => {
    const m = await server.createMerchant()
    const seen: Array<number> = []
    for (let i = 0; i < BURST; i++) {
      const res = await server.api(i % 2 === 0 ? "/items?limit=1" : "/balance", { key: m.apiKey })
      expect(res.status).toBe(200)
      seen.push(remaining(res))
    }
    expect(seen).toEqual([...Array(BURST).keys()].map((i) => BURST - 1 - i))
    for (const path of ["/items?limit=1", "/balance", "/items/search?market_hash_name=x"]) {
      const limited = await server.api(path, { key: m.apiKey })
      expectError(limited, 429, "MERCHANT_RATE_LIMITED")
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
      expect(remaining(limited)).toBe(0)
    }
  })
})
