/**
 * POST /buy in the fast lane (src/FastLane.ts, bought by Purchases/BuyEngine.ts) over real
 * sockets, on either database. A cached key's buy is answered there, and must answer exactly as
 * HttpApi does: a purchase, a repeated custom_id, the buy engine's refusals, the validation's
 * refusals and an inactive merchant's. Each answer changes nothing it should not and costs one
 * rate-limit token. (fast-handler-parity.test.ts compares each refusal's bytes with HttpApi's.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PurchaseCreated } from "../../src/Purchases/Api.js"
import { bodyOf, codeOf, expectError, objectOf } from "../support/expectations.js"
import { bought, buyBody } from "../support/purchases.js"
import type { JsonResponse, RunningServer } from "../support/server.js"
import { fastLaneAnswers, setMerchantStatus, startServer } from "../support/server.js"

const TRADE_URL = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
let server: RunningServer
type Item = { id: string; price: number; market_hash_name: string; delivery_type: string; estimated_delivery_minutes: number | null }
let items: Array<Item>
let mostExpensive: Item

beforeAll(async () => {
  server = await startServer({
    env: { SIM_CHURN_PER_SECOND: "0", SIM_CATALOGUE_SIZE: "300", RATE_LIMIT_RPS: "0.01", RATE_LIMIT_BURST: "40" }
  })
  const browser = await server.createMerchant()
  items = [...await listed(browser.apiKey, "price_asc", 100)]
  mostExpensive = (await listed(browser.apiKey, "price_desc", 1))[0]!
})
afterAll(async () => {
  await server?.stop()
})

const fastBuys = () => fastLaneAnswers(server, "/buy")

/** GET /items through the typed client: the first `limit` items in price order. */
const listed = async (key: string, sort: "price_asc" | "price_desc", limit: number) =>
  (await server.merchant(key).call((client) => client.catalogue.listItems({ urlParams: { limit, sort } }))).items

/** GET /balance through the typed client. */
const balanceOf = (key: string) => server.merchant(key).call((client) => client.balance.getBalance())

const remaining = (res: JsonResponse) => Number(res.headers.get("x-ratelimit-remaining"))

const buy = (key: string, fields: Record<string, unknown>) =>
  server.api("/buy", {
    method: "POST",
    key,
    body: { item_id: items[0]!.id, max_price: 1000, custom_id: `c-${Math.random()}`, target_trade_url: TRADE_URL, ...fields }
  })

/** A funded merchant that has not used its key yet: its first request goes through HttpApi. */
const fundedColdMerchant = async () => {
  const m = await server.createMerchant()
  await server.deposit(m.id, 102.5)
  return m
}

/** A funded merchant whose key is cached (its first request went through HttpApi). */
const warmMerchant = async () => {
  const m = await fundedColdMerchant()
  expect((await balanceOf(m.apiKey)).available).toBe(101.47)
  return m
}

/** The body's keys, in order, at every level: what a client's parser could notice. */
const shape = (value: unknown): unknown => value !== null && typeof value === "object" ? Object.entries(value).map(([k, v]) => [k, shape(v)]) : typeof value

const cents = (usd: number) => Math.round(usd * 100)

describe("POST /buy in the fast lane", () => {
  it("buys as HttpApi does: same status, headers and body shape, exact balance_after, one token", async () => {
    const [cold, hot] = [items[1]!, items[2]!]
    // a merchant whose first request is the buy: its key is not cached, so HttpApi answers
    const first = await fundedColdMerchant()
    const before = await fastBuys()
    const viaHttpApi = await buy(first.apiKey, { item_id: cold.id, custom_id: "same" })
    expect(await fastBuys()).toBe(before)

    const m = await warmMerchant()
    const balance = await server.api("/balance", { key: m.apiKey })
    const viaFastLane = await buy(m.apiKey, { item_id: hot.id, custom_id: "same" })
    expect(await fastBuys()).toBe(before + 1)

    for (const [res, item] of [[viaHttpApi, cold], [viaFastLane, hot]] as const) {
      expect(res.status).toBe(201)
      expect(res.headers.get("content-type")).toBe("application/json")
      expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(res.text)))
      const body = bodyOf(res, PurchaseCreated)
      expect(body).toMatchObject({
        custom_id: "same",
        status: "created",
        item: {
          market_hash_name: item.market_hash_name,
          price: item.price,
          delivery_type: item.delivery_type,
          estimated_delivery_minutes: item.estimated_delivery_minutes
        }
      })
      expect(cents(body.balance_after)).toBe(cents(101.47) - cents(item.price))
      expect(body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    }
    expect(shape(viaFastLane.json)).toEqual(shape(viaHttpApi.json))
    expect(remaining(viaFastLane)).toBe(remaining(balance) - 1)
    expect(viaFastLane.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)

    // the purchase is the one GET /purchases/{id} shows, and the ledger has its debit
    const created = bodyOf(viaFastLane, PurchaseCreated)
    const detail = await server.merchant(m.apiKey).call((client) => client.purchases.getPurchase({ path: { purchaseId: created.purchase_id } }))
    expect(detail).toMatchObject({ purchase_id: created.purchase_id, custom_id: "same", price: hot.price })
    const after = await balanceOf(m.apiKey)
    expect(cents(after.available)).toBe(cents(created.balance_after))
    expect(cents(after.total_deposited) - cents(after.available)).toBe(cents(hot.price))
  })

  it("answers a repeat in the fast lane: the same purchase, no second debit, one token", async () => {
    const m = await warmMerchant()
    const item = items[3]!
    const first = await buy(m.apiKey, { item_id: item.id, custom_id: "again" })
    expect(first.status).toBe(201)
    const before = await fastBuys()
    const repeat = await buy(m.apiKey, { item_id: item.id, custom_id: "again" })
    expect(await fastBuys()).toBe(before + 1)
    expect(repeat.status).toBe(201)
    // the status may have moved on since; everything else is the first answer, in the same order
    expect(JSON.stringify({ ...objectOf(repeat), status: null })).toBe(JSON.stringify({ ...objectOf(first), status: null }))
    expect(remaining(repeat)).toBe(remaining(first) - 1)
    expect(cents((await balanceOf(m.apiKey)).available)).toBe(cents(101.47) - cents(item.price))
  })

  it("answers the buy's refusals and invalid bodies in the fast lane with HttpApi's bytes: nothing changed, one token each", async () => {
    const m = await warmMerchant()
    const owned = items[4]!
    await bought(server, m, buyBody({ itemId: owned.id, maxPrice: 1000, customId: "taken" }))
    expect(mostExpensive.price).toBeGreaterThan(101.47)
    const before = await fastBuys()
    let last = await server.api("/balance", { key: m.apiKey })
    const unknownItem = { item_id: "3f1c2b9a-8d7e-4c6b-9a5f-0e1d2c3b4a59" }
    const soldItem = { item_id: owned.id }
    const abovePrice = { item_id: items[5]!.id, max_price: items[5]!.price - 0.01 }
    const beyondBalance = { item_id: mostExpensive.id, max_price: mostExpensive.price }
    // [what, the request, status, code, answered in the fast lane (every refusal of a cached key is)]
    const refusals: Array<[string, (key: string) => Promise<JsonResponse>, number, string, boolean]> = [
      ["an unknown item", (key) => buy(key, unknownItem), 404, "MERCHANT_ITEM_NOT_FOUND", true],
      ["an item already sold", (key) => buy(key, soldItem), 409, "MERCHANT_ITEM_UNAVAILABLE", true],
      ["a price above max_price", (key) => buy(key, abovePrice), 409, "MERCHANT_PRICE_CHANGED", true],
      ["a custom_id used for another item", (key) => buy(key, { item_id: items[6]!.id, custom_id: "taken" }), 409, "MERCHANT_DUPLICATE_CUSTOM_ID", true],
      ["a balance below the live price", (key) => buy(key, beyondBalance), 402, "MERCHANT_INSUFFICIENT_BALANCE", true],
      ["a bad trade URL", (key) => buy(key, { target_trade_url: "https://example.com/" }), 400, "MERCHANT_INVALID_TRADE_URL", true],
      [
        "a SteamID64 that is not the trade URL's",
        (key) => buy(key, { item_id: items[7]!.id, target_steam_id: "76561197960265729" }),
        400,
        "MERCHANT_STEAM_ID_MISMATCH",
        true
      ],
      ["a body that is not JSON", (key) => server.api("/buy", { method: "POST", key, body: "{\"item_id\": " }), 400, "MERCHANT_MALFORMED_JSON", true]
    ]
    let fast = 0
    for (const [what, request, status, code, inFastLane] of refusals) {
      const counted = await fastBuys()
      const res = await request(m.apiKey)
      expect(await fastBuys(), what).toBe(counted + (inFastLane ? 1 : 0))
      if (inFastLane) fast++
      // a body that is not JSON gets problem details, with the spec's error object beside them
      if (code === "MERCHANT_MALFORMED_JSON") expect([res.status, codeOf(res)]).toEqual([status, code])
      else expectError(res, status, code)
      expect(remaining(res), what).toBe(remaining(last) - 1)
      last = res
    }
    expect(await fastBuys()).toBe(before + fast)

    // the same refusals through HttpApi (a merchant whose first request is the buy: its key is not
    // cached) give the same bytes
    for (const fields of [unknownItem, soldItem, abovePrice, beyondBalance]) {
      const [hot, cold] = [await buy(m.apiKey, fields), await fundedColdMerchant().then((c) => buy(c.apiKey, fields))]
      expect({ status: hot.status, type: hot.headers.get("content-type"), body: hot.text }).toEqual({
        status: cold.status,
        type: cold.headers.get("content-type"),
        body: cold.text
      })
    }

    expect(cents((await balanceOf(m.apiKey)).available)).toBe(cents(101.47) - cents(owned.price))
    const purchases = await server.merchant(m.apiKey).call((client) => client.purchases.listPurchases({ urlParams: {} }))
    expect(purchases.purchases.map((p) => p.custom_id)).toEqual(["taken"])
    // the items it was refused are still live
    const live = new Set((await listed((await warmMerchant()).apiKey, "price_asc", 100)).map((i) => i.id))
    for (const item of [items[5]!, items[6]!, items[7]!]) expect(live.has(item.id)).toBe(true)
    expect((await listed((await warmMerchant()).apiKey, "price_desc", 1))[0]!.id).toBe(mostExpensive.id)
  })

  it("refuses an inactive merchant's buy with the middleware's bytes (in the fast lane itself): 403, one token", async () => {
    const m = await warmMerchant()
    await setMerchantStatus(server, m.id, "inactive")
    // a read caches the key again, with its new status; this process's own notification of the
    // change (which may come later) does not empty the cache again
    const balance = await server.api("/balance", { key: m.apiKey })
    const before = await fastBuys()
    const res = await buy(m.apiKey, { item_id: items[8]!.id })
    expectError(res, 403, "MERCHANT_NOT_ACTIVE")
    expect(remaining(res)).toBe(remaining(balance) - 1)
    // refused in the fast lane itself, with the bytes the middleware gives
    expect(await fastBuys()).toBe(before + 1)
    // the middleware's answer to another POST (no fast route): the same body
    const wallet = await server.api("/deposits/wallets", { method: "POST", key: m.apiKey, body: { network: "tron" } })
    expectError(wallet, 403, "MERCHANT_NOT_ACTIVE")
    expect(wallet.text).toBe(res.text)
    expect(remaining(wallet)).toBe(remaining(res) - 1)
  })
})
