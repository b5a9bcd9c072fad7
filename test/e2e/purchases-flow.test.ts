/**
 * Purchases over real sockets (spec 2.2, 2.8, 2.9, 3.1, 4.3, 7.2, 7.3; CONTRACT 2, 5, 6): /buy
 * validation (each bad request changes nothing), the pre-checks against the live item (404, 409
 * unavailable, exact max_price comparison, 402 against the live price), merchant status before
 * validation, the state machine and money movement of every simulator token, and GET /purchases
 * (filters, order, pagination, isolation).
 */
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { codeOf, expectError, field, isUuid } from "../support/expectations.js"
import {
  balanceOf,
  bought,
  buy,
  buyBody,
  buyByName,
  byNameBody,
  type Detail,
  fundedMerchant,
  getPurchase,
  IN_FLIGHT,
  IN_FLIGHT_STATUSES,
  itemOf,
  listedIds,
  listPurchases,
  loadItem,
  loadItems,
  type Merchant,
  PARTNER,
  pollUntil,
  PURCHASE_ENV,
  sleep,
  steamIdOf,
  TOKENS,
  tradeUrl,
  uniqueName,
  watchPurchase
} from "../support/purchases.js"
import { type RunningServer, setMerchantStatus, startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: PURCHASE_ENV })
})
afterAll(async () => {
  await server?.stop()
})

const patchStatus = async (m: Merchant, status: "active" | "blocked" | "inactive") => {
  await setMerchantStatus(server, m.id, status)
}

describe("POST /buy and /buy-sync validation (spec 4.3, 7.2; CONTRACT 6)", () => {
  const url = (partner: string, token = "abcd1234") => `https://steamcommunity.com/tradeoffer/new/?partner=${partner}&token=${token}`

  /** [what, body change (undefined deletes the field), code]. */
  const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
    ["item_id missing", { item_id: undefined }, "MERCHANT_INVALID_ITEM_ID"],
    ["item_id not a uuid", { item_id: "not-a-uuid" }, "MERCHANT_INVALID_ITEM_ID"],
    ["item_id the empty uuid", { item_id: "00000000-0000-0000-0000-000000000000" }, "MERCHANT_INVALID_ITEM_ID"],
    ["item_id a number", { item_id: 12345 }, "MERCHANT_INVALID_ITEM_ID"],
    ["item_id null", { item_id: null }, "MERCHANT_INVALID_ITEM_ID"],
    ["max_price 0", { max_price: 0 }, "MERCHANT_INVALID_MAX_PRICE"],
    ["max_price -1", { max_price: -1 }, "MERCHANT_INVALID_MAX_PRICE"],
    ["max_price a string", { max_price: "10" }, "MERCHANT_INVALID_MAX_PRICE"],
    ["max_price missing", { max_price: undefined }, "MERCHANT_INVALID_MAX_PRICE"],
    ["custom_id empty", { custom_id: "" }, "MERCHANT_INVALID_CUSTOM_ID"],
    ["custom_id 101 chars", { custom_id: "x".repeat(101) }, "MERCHANT_INVALID_CUSTOM_ID"],
    ["custom_id missing", { custom_id: undefined }, "MERCHANT_INVALID_CUSTOM_ID"],
    ["custom_id a number", { custom_id: 7 }, "MERCHANT_INVALID_CUSTOM_ID"],
    ["trade URL over http", { target_trade_url: "http://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcd1234" }, "MERCHANT_INVALID_TRADE_URL"],
    [
      "trade URL on another host",
      { target_trade_url: "https://steamcommunity.example.com/tradeoffer/new/?partner=12345678&token=abcd1234" },
      "MERCHANT_INVALID_TRADE_URL"
    ],
    [
      "trade URL on another path",
      { target_trade_url: "https://steamcommunity.com/tradeoffer/old/?partner=12345678&token=abcd1234" },
      "MERCHANT_INVALID_TRADE_URL"
    ],
    ["trade URL partner 0", { target_trade_url: url("0") }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL partner 4294967296", { target_trade_url: url("4294967296") }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL partner not a number", { target_trade_url: url("abc") }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL token of 7 chars", { target_trade_url: url("12345678", "abcd123") }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL token of 9 chars", { target_trade_url: url("12345678", "abcd12345") }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL token with a bad char", { target_trade_url: url("12345678", "abcd!234") }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL with an extra parameter", { target_trade_url: `${url("12345678")}&foo=bar` }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL without token", { target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=12345678" }, "MERCHANT_INVALID_TRADE_URL"],
    // CONTRACT 5.1: "anything else", also what a URL parser would forgive
    [
      "trade URL with token before partner",
      { target_trade_url: "https://steamcommunity.com/tradeoffer/new/?token=abcd1234&partner=12345678" },
      "MERCHANT_INVALID_TRADE_URL"
    ],
    ["trade URL with a percent-encoded partner", { target_trade_url: url("%31%32%33") }, "MERCHANT_INVALID_TRADE_URL"],
    [
      "trade URL with an upper-case host",
      { target_trade_url: "https://SteamCommunity.com/tradeoffer/new/?partner=12345678&token=abcd1234" },
      "MERCHANT_INVALID_TRADE_URL"
    ],
    ["trade URL with an empty fragment", { target_trade_url: `${url("12345678")}#` }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL missing", { target_trade_url: undefined }, "MERCHANT_INVALID_TRADE_URL"],
    ["trade URL not a URL", { target_trade_url: "steam please" }, "MERCHANT_INVALID_TRADE_URL"],
    ["target_steam_id too short", { target_steam_id: "123" }, "MERCHANT_INVALID_STEAM_ID"],
    ["target_steam_id not digits", { target_steam_id: "7656119abcdefghij" }, "MERCHANT_INVALID_STEAM_ID"],
    ["target_steam_id of account 0", { target_steam_id: "76561197960265728" }, "MERCHANT_INVALID_STEAM_ID"],
    ["target_steam_id beyond the account range", { target_steam_id: "76561202255233024" }, "MERCHANT_INVALID_STEAM_ID"],
    ["target_steam_id a number", { target_steam_id: 76561197972611392 }, "MERCHANT_INVALID_STEAM_ID"],
    ["target_steam_id valid but another account", { target_steam_id: steamIdOf(87654321) }, "MERCHANT_STEAM_ID_MISMATCH"]
  ]

  it.each(["/buy", "/buy-sync"] as const)("%s: every invalid field gets its own code and leaves the balance unchanged", async (path) => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 1_000)
    const before = await balanceOf(server, m)
    const valid = buyBody({ itemId, maxPrice: 20 })
    for (const [what, change, code] of cases) {
      const body: Record<string, unknown> = { ...valid, custom_id: `v-${randomUUID()}`, ...change }
      for (const [k, v] of Object.entries(change)) if (v === undefined) delete body[k]
      const res = await buy(server, m, body, path)
      expect(`${what}: ${res.status} ${codeOf(res)}`).toBe(`${what}: 400 ${code}`)
      expectError(res, 400, code)
    }
    // a body that is not JSON: RFC 9457 problem details
    const malformed = await buy(server, m, "{\"item_id\": ", path)
    expect(malformed.status).toBe(400)
    expect(malformed.headers.get("content-type") ?? "").toMatch(/^application\/problem\+json/)
    expect(field(malformed.json, "status")).toBe(400)
    // an empty body is no JSON either
    const empty = await buy(server, m, "", path)
    expect(empty.status).toBe(400)
    expect(empty.headers.get("content-type") ?? "").toMatch(/^application\/problem\+json/)
    expect(codeOf(empty)).toBe("MERCHANT_MALFORMED_JSON")

    expect(await balanceOf(server, m)).toEqual(before)
    expect(await listPurchases(server, m)).toEqual([])
    // the item is still for sale: nothing was reserved
    const ok = await buy(server, m, valid, path)
    // buy-sync: 200 once acknowledged, 202 if the wait budget ran out first
    expect(path === "/buy" ? [201] : [200, 202], ok.text).toContain(ok.status)
  })

  it("reads a body as JSON whatever its Content-Type says: JSON as text/plain or with none is bought; text that is not JSON gets problem details", async () => {
    const m = await fundedMerchant(server, 10_000)
    const [a, b, c] = await loadItems(server, [itemOf(100), itemOf(100), itemOf(100)])
    const before = await balanceOf(server, m)
    const post = (body: string, contentType: string | undefined) =>
      fetch(`${server.baseUrl}/api/v1/merchant/buy`, {
        method: "POST",
        headers: { authorization: `Bearer ${m.apiKey}`, ...(contentType === undefined ? {} : { "content-type": contentType }) },
        // bytes, not a string: fetch labels a string body text/plain itself
        body: new TextEncoder().encode(body)
      })
    // text that is not JSON, whatever it is labelled: problem details, nothing bought
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded", undefined]) {
      const res = await post("item_id=x&max_price=1", contentType)
      expect([contentType, res.status, res.headers.get("content-type")?.split(";")[0], field(await res.json(), "error", "code")])
        .toEqual([contentType, 400, "application/problem+json", "MERCHANT_MALFORMED_JSON"])
    }
    expect(await balanceOf(server, m)).toEqual(before)
    // JSON labelled otherwise (or not at all) is read as JSON: a field's own code, and a purchase
    const wrongField = await post(JSON.stringify({ ...buyBody({ itemId: a!, maxPrice: 1 }), item_id: 5 }), "text/plain")
    expect([wrongField.status, field(await wrongField.json(), "error", "code")]).toEqual([400, "MERCHANT_INVALID_ITEM_ID"])
    for (const [itemId, contentType] of [[b!, "text/plain;charset=UTF-8"], [c!, undefined]] as const) {
      const res = await post(JSON.stringify(buyBody({ itemId, maxPrice: 1 })), contentType)
      expect([contentType, res.status]).toEqual([contentType, 201])
    }
    expect((await listPurchases(server, m)).length).toBe(2)
  })

  it("accepts the boundaries: partner 1 and 4294967295, a 100-character custom_id, the derived target_steam_id", async () => {
    const m = await fundedMerchant(server, 10_000)
    const [a, b, c] = await loadItems(server, [itemOf(100), itemOf(100), itemOf(100)])
    const first = await bought(server, m, buyBody({ itemId: a!, maxPrice: 1, partner: 1, steamId: steamIdOf(1) }))
    const last = await bought(server, m, buyBody({ itemId: b!, maxPrice: 1, partner: 4294967295 }))
    const longId = "L".repeat(99) + "é"
    const long = await bought(server, m, buyBody({ itemId: c!, maxPrice: 1, customId: longId }))
    expect(long.custom_id).toBe(longId)
    expect((await getPurchase(server, m, first.purchase_id)).target_steam_id).toBe("76561197960265729")
    expect((await getPurchase(server, m, last.purchase_id)).target_steam_id).toBe("76561202255233023")
  })

  it("/buy-by-name validates its own fields", async () => {
    const m = await fundedMerchant(server, 10_000)
    const valid = byNameBody({ name: "Whatever", maxPrice: 5 })
    const byNameCases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
      [{ market_hash_name: "" }, "MERCHANT_INVALID_MARKET_HASH_NAME"],
      [{ market_hash_name: "n".repeat(201) }, "MERCHANT_INVALID_MARKET_HASH_NAME"],
      [{ market_hash_name: undefined }, "MERCHANT_INVALID_MARKET_HASH_NAME"],
      [{ max_price: 0 }, "MERCHANT_INVALID_MAX_PRICE"],
      [{ max_price: "5" }, "MERCHANT_INVALID_MAX_PRICE"],
      [{ trade_url: tradeUrl("short") }, "MERCHANT_INVALID_TRADE_URL"],
      [{ trade_url: undefined }, "MERCHANT_INVALID_TRADE_URL"],
      [{ custom_id: "" }, "MERCHANT_INVALID_CUSTOM_ID"],
      [{ custom_id: "y".repeat(101) }, "MERCHANT_INVALID_CUSTOM_ID"],
      [{ estimated_time: 9 }, "MERCHANT_INVALID_ESTIMATED_TIME"],
      [{ estimated_time: 10.5 }, "MERCHANT_INVALID_ESTIMATED_TIME"],
      [{ estimated_time: "30" }, "MERCHANT_INVALID_ESTIMATED_TIME"]
    ]
    for (const [change, code] of byNameCases) {
      const body: Record<string, unknown> = { ...valid, ...change }
      for (const [k, v] of Object.entries(change)) if (v === undefined) delete body[k]
      const res = await buyByName(server, m, body)
      expect(`${JSON.stringify(change).slice(0, 60)}: ${res.status} ${codeOf(res)}`).toBe(
        `${JSON.stringify(change).slice(0, 60)}: 400 ${code}`
      )
      expectError(res, 400, code)
    }
    expect((await balanceOf(server, m)).available).toBe(10_000)
  })
})

describe("pre-checks against the live item (spec 4.3, 7.2; CONTRACT 6)", () => {
  it("404 MERCHANT_ITEM_NOT_FOUND for an unknown item", async () => {
    const m = await fundedMerchant(server, 10_000)
    expectError(await buy(server, m, buyBody({ itemId: randomUUID(), maxPrice: 10 })), 404, "MERCHANT_ITEM_NOT_FOUND")
    expect((await balanceOf(server, m)).available).toBe(10_000)
  })

  it("409 MERCHANT_ITEM_UNAVAILABLE for a delisted item and for an item already bought", async () => {
    const m = await fundedMerchant(server, 10_000)
    const other = await fundedMerchant(server, 10_000)
    const [gone, sold] = await loadItems(server, [itemOf(500), itemOf(500)])
    await server.adminApi.call((client) => client.catalogue.removeItem({ path: { id: gone! } }))
    expectError(await buy(server, m, buyBody({ itemId: gone!, maxPrice: 10 })), 409, "MERCHANT_ITEM_UNAVAILABLE")

    await bought(server, other, buyBody({ itemId: sold!, maxPrice: 10 }))
    expectError(await buy(server, m, buyBody({ itemId: sold!, maxPrice: 10 })), 409, "MERCHANT_ITEM_UNAVAILABLE")
    // the same merchant with another custom_id: still one item, one sale
    expectError(await buy(server, other, buyBody({ itemId: sold!, maxPrice: 10 })), 409, "MERCHANT_ITEM_UNAVAILABLE")
    expect(await balanceOf(server, m)).toMatchObject({ available: 10_000, totalSpent: 0, onHold: 0 })
    expect((await balanceOf(server, other)).totalSpent).toBe(500)
  })

  it("compares max_price with the live price exactly, to any number of decimals", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 1_000)
    for (const maxPrice of [9.999, 9.99, 9.9999999]) {
      expectError(await buy(server, m, buyBody({ itemId, maxPrice })), 409, "MERCHANT_PRICE_CHANGED")
    }
    // more digits than a binary double holds: JSON.parse reads these as 10, the client wrote less
    const written = (path: "/buy" | "/buy-sync", literal: string) =>
      buy(server, m, JSON.stringify(buyBody({ itemId, maxPrice: 1 })).replace(`"max_price":1`, `"max_price":${literal}`), path)
    for (const path of ["/buy", "/buy-sync"] as const) {
      for (const literal of ["9.99999999999999999999", "9.999999999999999999999999999999e0", "999.999999999999999999999e-2"]) {
        expectError(await written(path, literal), 409, "MERCHANT_PRICE_CHANGED")
      }
    }
    // by name: a 0.01 item is above 0.00999…, which JSON.parse reads as 0.01
    const name = uniqueName()
    await loadItem(server, 1, { market_hash_name: name })
    const byName = await buyByName(
      server,
      m,
      JSON.stringify(byNameBody({ name, maxPrice: 1 }))
        .replace(`"max_price":1`, `"max_price":0.00999999999999999999999`)
    )
    expectError(byName, 400, "MERCHANT_NO_ITEMS_FOUND")
    expect(await balanceOf(server, m)).toMatchObject({ available: 10_000, totalSpent: 0 })
    const ok = await bought(server, m, buyBody({ itemId, maxPrice: 10.001 }))
    expect(ok.item.price).toBe(10)
    // the actual price is debited, never the ceiling
    expect(ok.balance_after).toBe(90)
    const exact = await loadItem(server, 1_000)
    await bought(server, m, buyBody({ itemId: exact, maxPrice: 10 }))
  })

  it("402 against the live price, not max_price, and the price check comes first", async () => {
    const m = await fundedMerchant(server, 500)
    const itemId = await loadItem(server, 1_000)
    expectError(await buy(server, m, buyBody({ itemId, maxPrice: 1_000 })), 402, "MERCHANT_INSUFFICIENT_BALANCE")
    expectError(await buy(server, m, buyBody({ itemId, maxPrice: 9.99 })), 409, "MERCHANT_PRICE_CHANGED")
    const cheap = await loadItem(server, 499)
    // a ceiling far above the balance does not matter: only the actual price is debited
    const ok = await bought(server, m, buyBody({ itemId: cheap, maxPrice: 1_000_000 }))
    expect(ok.balance_after).toBe(0.01)
    expect(await balanceOf(server, m)).toMatchObject({ available: 1, totalSpent: 499 })
  })
})

describe("merchant status comes before validation (CONTRACT 2, 6)", () => {
  it("a blocked merchant gets 403 MERCHANT_BLOCKED on purchases, even with an invalid body", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 100)
    await patchStatus(m, "blocked")
    expectError(await buy(server, m, buyBody({ itemId, maxPrice: 10 })), 403, "MERCHANT_BLOCKED")
    expectError(await buy(server, m, { item_id: "nope", max_price: -1 }), 403, "MERCHANT_BLOCKED")
    expectError(await buy(server, m, "{not json"), 403, "MERCHANT_BLOCKED")
    expectError(await buy(server, m, { item_id: "nope" }, "/buy-sync"), 403, "MERCHANT_BLOCKED")
    expectError(await buyByName(server, m, { market_hash_name: "" }), 403, "MERCHANT_BLOCKED")
    expectError(await server.api("/purchases", { key: m.apiKey }), 403, "MERCHANT_BLOCKED")
    expectError(await server.api(`/purchases/${randomUUID()}`, { key: m.apiKey }), 403, "MERCHANT_BLOCKED")
    await patchStatus(m, "active")
    expect((await balanceOf(server, m)).available).toBe(10_000)
  })

  it("an inactive merchant gets 403 MERCHANT_NOT_ACTIVE on purchase creation, even with an invalid body; reads still work", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 100)
    await patchStatus(m, "inactive")
    expectError(await buy(server, m, buyBody({ itemId, maxPrice: 10 })), 403, "MERCHANT_NOT_ACTIVE")
    expectError(await buy(server, m, { item_id: 1, max_price: 0, custom_id: "" }), 403, "MERCHANT_NOT_ACTIVE")
    expectError(await buy(server, m, "{not json"), 403, "MERCHANT_NOT_ACTIVE")
    expectError(await buy(server, m, buyBody({ itemId, maxPrice: 10 }), "/buy-sync"), 403, "MERCHANT_NOT_ACTIVE")
    expectError(await buyByName(server, m, byNameBody({ name: "x", maxPrice: 0 })), 403, "MERCHANT_NOT_ACTIVE")
    await server.merchant(m.apiKey).call((client) => client.purchases.listPurchases({ urlParams: {} }))
    expect(await balanceOf(server, m)).toMatchObject({ available: 10_000, totalSpent: 0 })
    await patchStatus(m, "active")
    await bought(server, m, buyBody({ itemId, maxPrice: 10 }))
  })
})

describe("the state machine of every simulator token (spec 2.2, 3.1, 7.3; CONTRACT 5.1)", () => {
  interface Expectation {
    readonly token: string
    readonly status: "completed" | "failed"
    readonly code: string | null
    /** refunded_amount: the price, 0, or null. */
    readonly refund: "full" | "zero" | "null" | "none"
    /** A trade offer was sent (its id becomes known). */
    readonly offer: boolean
    /** Delivered at some point (completed_at set). */
    readonly delivered: boolean
    /** The done condition: reversals end in failed after completed. */
    readonly reversal?: boolean
  }
  const table: ReadonlyArray<Expectation> = [
    { token: "abcd1234", status: "completed", code: null, refund: "none", offer: true, delivered: true },
    { token: TOKENS.declined, status: "failed", code: "TRADE_DECLINED", refund: "full", offer: true, delivered: false },
    { token: TOKENS.expired, status: "failed", code: "TRADE_EXPIRED", refund: "full", offer: true, delivered: false },
    { token: TOKENS.private, status: "failed", code: "INVENTORY_PRIVATE", refund: "full", offer: false, delivered: false },
    { token: TOKENS.badtoken, status: "failed", code: "INVALID_TRADE_URL", refund: "full", offer: false, delivered: false },
    { token: TOKENS.slowack, status: "completed", code: null, refund: "none", offer: true, delivered: true },
    { token: TOKENS.topup, status: "completed", code: null, refund: "none", offer: true, delivered: true },
    { token: TOKENS.revbuyer, status: "failed", code: "REVERTED_BY_BUYER", refund: "zero", offer: true, delivered: true, reversal: true },
    { token: TOKENS.revseller, status: "failed", code: "REVERTED_BY_SELLER", refund: "full", offer: true, delivered: true, reversal: true },
    { token: TOKENS.review, status: "failed", code: "MANUAL_REVIEW", refund: "null", offer: true, delivered: false }
  ]

  it.each(table)("token $token ends $status $code with the right money movement", async (e) => {
    const deposited = 5_000
    const price = 1_234
    const m = await fundedMerchant(server, deposited)
    const input = itemOf(price, { estimated_delivery_minutes: 42, exterior: "Minimal Wear", float: 0.0712 })
    const [itemId] = await loadItems(server, [input])
    const customId = `sm-${e.token}-${randomUUID().slice(0, 8)}`
    const created = await bought(server, m, buyBody({ itemId: itemId!, maxPrice: 20, customId, token: e.token }))
    expect(created).toMatchObject({
      custom_id: customId,
      status: "created",
      item: { market_hash_name: input.market_hash_name, price: 12.34, delivery_type: "instant", estimated_delivery_minutes: 42 },
      balance_after: (deposited - price) / 100
    })

    // while in flight, the price is on hold (read between two reads that both show it in flight)
    const during = await getPurchase(server, m, created.purchase_id)
    const balanceDuring = await balanceOf(server, m)
    const after = await getPurchase(server, m, created.purchase_id)
    if (IN_FLIGHT.includes(during.status) && IN_FLIGHT.includes(after.status)) {
      expect(balanceDuring).toEqual({ available: deposited - price, onHold: price, totalDeposited: deposited, totalSpent: price })
    }

    const done = e.reversal === true ? (d: Detail) => d.status === "failed" : (d: Detail) => d.status === "completed" || d.status === "failed"
    const { final, path } = await watchPurchase(server, m, created.purchase_id, done)
    expect(final.status).toBe(e.status)
    if (e.reversal === true) expect(path).toContain("completed")
    expect(final).toMatchObject({
      purchase_id: created.purchase_id,
      custom_id: customId,
      item: {
        id: itemId,
        market_hash_name: input.market_hash_name,
        image_url: input.image_url,
        exterior: "Minimal Wear",
        float: 0.0712,
        delivery_type: "instant",
        estimated_delivery_minutes: 42
      },
      price: 12.34,
      target_steam_id: steamIdOf(PARTNER),
      created_at: created.created_at
    })
    if (e.code === null) {
      expect(final.failure).toBeNull()
    } else {
      expect(final.failure?.code).toBe(e.code)
      expect(final.failure?.message.length).toBeGreaterThan(0)
      const refunded = final.failure?.refunded_amount
      if (e.refund === "full") expect(refunded).toBe(12.34)
      if (e.refund === "zero") expect(refunded).toBe(0)
      if (e.refund === "null") expect(refunded).toBeNull()
    }
    if (e.offer) {
      expect(final.trade_offer_id).toMatch(/^\d+$/)
      expect(final.trade_offer_url).toContain(final.trade_offer_id)
    } else {
      expect(final.trade_offer_id).toBeNull()
      expect(final.trade_offer_url).toBeNull()
    }
    if (e.delivered) {
      expect(final.completed_at).not.toBeNull()
      expect(Date.parse(final.completed_at!)).toBeGreaterThanOrEqual(Date.parse(final.created_at))
    } else {
      expect(final.completed_at).toBeNull()
    }

    // money (spec 2.2): only an applied refund credits; completion and every end release on_hold
    const spent = e.refund === "full" ? 0 : price
    expect(await balanceOf(server, m)).toEqual({ available: deposited - spent, onHold: 0, totalDeposited: deposited, totalSpent: spent })
    // the list shows the same purchase
    const listed = await listPurchases(server, m)
    expect(listed.map((p) => p.purchase_id)).toEqual([created.purchase_id])
    expect(listed[0]).toEqual(final)
  })

  it("the bought item leaves GET /items", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = `Leaving | ${randomUUID().slice(0, 8)}`
    const [sold, stays] = await loadItems(server, [itemOf(300, { market_hash_name: name }), itemOf(400, { market_hash_name: name })])
    await pollUntil("both items listed", async () => (await listedIds(server, m, name)).length === 2 ? true : undefined)
    await bought(server, m, buyBody({ itemId: sold!, maxPrice: 3 }))
    await pollUntil("the sold item delisted", async () => {
      const ids = await listedIds(server, m, name)
      return ids.length === 1 ? ids : undefined
    }).then((ids) => expect(ids).toEqual([stays]))
    // and it stays out after the purchase ends, whatever the outcome
    const failed = await loadItem(server, 300, { market_hash_name: name })
    const res = await bought(server, m, buyBody({ itemId: failed, maxPrice: 3, token: TOKENS.private }))
    await watchPurchase(server, m, res.purchase_id)
    await pollUntil("the refunded item delisted", async () => {
      const ids = await listedIds(server, m, name)
      return ids.length === 1 ? ids : undefined
    }).then((ids) => expect(ids).toEqual([stays]))
    expectError(await buy(server, m, buyBody({ itemId: failed, maxPrice: 3 })), 409, "MERCHANT_ITEM_UNAVAILABLE")
  })

  it("/buy-sync one after another: each is acknowledged within its wait, every step taken when it falls due", async () => {
    // the provider acknowledges 20-60 ms after pickup here (SIM_TIME_SCALE 0.02) and the wait is 2 s:
    // a 202 means the worker let a due step wait (its claimer once forgot a step announced while it
    // idled, and slept its whole idle wait)
    const m = await fundedMerchant(server, 10_000)
    const itemIds = await loadItems(server, Array.from({ length: 15 }, () => itemOf(100)))
    const statuses: Array<number> = []
    for (const itemId of itemIds) statuses.push((await buy(server, m, buyBody({ itemId, maxPrice: 1 }), "/buy-sync")).status)
    expect(statuses).toEqual(itemIds.map(() => 200))
  })

  it("a new purchase is handed to the worker of the process that bought it (its purchase-handover fiber beats)", async () => {
    const decodeFiberList = Schema.decodeUnknownSync(Schema.Struct({
      fibers: Schema.Array(Schema.Struct({ name: Schema.String, state: Schema.String, last_heartbeat: Schema.NullOr(Schema.String) }))
    }))
    const handoverBeat = async () => {
      const res = await fetch(`${server.opsUrl}/ops/fibers`)
      const { fibers } = decodeFiberList(await res.json())
      const fiber = fibers.find((f) => f.name === "purchase-handover")
      expect(fiber?.state).toBe("running")
      return fiber?.last_heartbeat ?? null
    }
    const before = await handoverBeat()
    const m = await fundedMerchant(server, 10_000)
    const res = await bought(server, m, buyBody({ itemId: await loadItem(server, 250), maxPrice: 3 }))
    await pollUntil("the handover fiber's beat", async () => {
      const beat = await handoverBeat()
      return beat !== null && beat !== before ? beat : undefined
    }, 10_000)
    await pollUntil("the purchase stepped", async () => {
      const detail = await getPurchase(server, m, res.purchase_id)
      return detail.status !== "created" ? detail.status : undefined
    }, 10_000)
  })
})

describe("GET /purchases (spec 4.3)", () => {
  let m: Merchant
  let other: Merchant
  /** Oldest first: [customId, token, partner]. */
  const plan = [
    ["list-1", "abcd1234", 111],
    ["list-2", TOKENS.private, 222],
    ["list-3", "abcd1234", 111],
    ["list-4", TOKENS.badtoken, 222],
    ["list-5", "abcd1234", 333]
  ] as const
  const made: Array<Detail> = []

  beforeAll(async () => {
    m = await fundedMerchant(server, 10_000)
    other = await fundedMerchant(server, 10_000)
    const ids = await loadItems(server, plan.map(() => itemOf(100)))
    for (let i = 0; i < plan.length; i++) {
      const [customId, token, partner] = plan[i]!
      const created = await bought(server, m, buyBody({ itemId: ids[i]!, maxPrice: 1, customId, token, partner }))
      made.push((await watchPurchase(server, m, created.purchase_id)).final)
      await sleep(15) // distinct created_at milliseconds
    }
    await bought(server, other, buyBody({ itemId: await loadItem(server, 100), maxPrice: 1, customId: "list-1", partner: 111 }))
  })

  const ids = (list: ReadonlyArray<Detail>) => list.map((p) => p.purchase_id)
  const newestFirst = () => [...made].reverse()

  it("lists newest first, each entry as GET one shows it", async () => {
    const all = await listPurchases(server, m)
    expect(ids(all)).toEqual(ids(newestFirst()))
    for (const p of all) expect(p).toEqual(await getPurchase(server, m, p.purchase_id))
    const times = all.map((p) => Date.parse(p.created_at))
    expect([...times].sort((a, b) => b - a)).toEqual(times)
  })

  it("filters by status, custom_id, target_steam_id and a created_at window", async () => {
    expect(ids(await listPurchases(server, m, { status: "completed" }))).toEqual(ids(newestFirst().filter((p) => p.status === "completed")))
    expect(ids(await listPurchases(server, m, { status: "failed" }))).toEqual([made[3]!.purchase_id, made[1]!.purchase_id])
    for (const status of IN_FLIGHT_STATUSES) expect(await listPurchases(server, m, { status })).toEqual([])
    expect(ids(await listPurchases(server, m, { custom_id: "list-3" }))).toEqual([made[2]!.purchase_id])
    expect(await listPurchases(server, m, { custom_id: "list-" })).toEqual([])
    expect(ids(await listPurchases(server, m, { target_steam_id: steamIdOf(222) }))).toEqual([made[3]!.purchase_id, made[1]!.purchase_id])
    expect(ids(await listPurchases(server, m, { target_steam_id: steamIdOf(111), status: "completed" }))).toEqual(
      [made[2]!.purchase_id, made[0]!.purchase_id]
    )
    const from = made[1]!.created_at
    const to = made[3]!.created_at
    expect(ids(await listPurchases(server, m, { from }))).toEqual(ids(newestFirst().slice(0, 4)))
    // a window whose ends are the created_at values the API reports holds both end purchases
    const inclusive = "to equal to a reported created_at includes that purchase (compared at the precision created_at is reported in)"
    expect(ids(await listPurchases(server, m, { from, to })), inclusive).toEqual(
      [made[3]!.purchase_id, made[2]!.purchase_id, made[1]!.purchase_id]
    )
    expect(ids(await listPurchases(server, m, { to })), inclusive).toEqual(ids(newestFirst().slice(1)))
    const future = new Date(Date.now() + 3_600_000).toISOString()
    expect(await listPurchases(server, m, { from: future })).toEqual([])
  })

  it("pages with an opaque cursor until next_cursor is null", async () => {
    for (const [limit, query] of [[1, {}], [2, {}], [4, {}], [1, { status: "completed" }]] as const) {
      const seen: Array<string> = []
      let cursor: string | null = null
      for (let page = 0; page < 10; page++) {
        const res: { purchases: ReadonlyArray<Detail>; next_cursor: string | null } = await server.merchant(m.apiKey).call((client) =>
          client.purchases.listPurchases({ urlParams: { limit, ...query, ...(cursor !== null ? { cursor } : {}) } })
        )
        expect(res.purchases.length).toBeLessThanOrEqual(limit)
        seen.push(...res.purchases.map((p) => p.purchase_id))
        cursor = res.next_cursor
        if (cursor === null) break
        expect(res.purchases.length).toBe(limit)
      }
      expect(cursor).toBeNull()
      expect(seen).toEqual(ids(await listPurchases(server, m, query)))
    }
  })

  it("rejects an unknown status, a bad limit and a malformed cursor", async () => {
    for (const status of ["pending", "COMPLETED", "sending", ""]) {
      expectError(await server.api(`/purchases?status=${status}`, { key: m.apiKey }), 400, "MERCHANT_INVALID_STATUS")
    }
    for (const q of ["limit=0", "limit=201", "limit=abc", "cursor=!!!", "cursor=bm90LWEtY3Vyc29y", "from=yesterday"]) {
      expectError(await server.api(`/purchases?${q}`, { key: m.apiKey }), 400, "MERCHANT_INVALID_QUERY")
    }
  })

  it("isolates merchants: another merchant's purchase is 404, and a non-uuid id is 404", async () => {
    const mine = made[0]!.purchase_id
    expectError(await server.api(`/purchases/${mine}`, { key: other.apiKey }), 404, "MERCHANT_PURCHASE_NOT_FOUND")
    expectError(await server.api(`/purchases/${randomUUID()}`, { key: m.apiKey }), 404, "MERCHANT_PURCHASE_NOT_FOUND")
    expectError(await server.api("/purchases/not-a-uuid", { key: m.apiKey }), 404, "MERCHANT_PURCHASE_NOT_FOUND")
    const theirs = await listPurchases(server, other)
    expect(theirs).toHaveLength(1)
    expect(isUuid(theirs[0]!.purchase_id)).toBe(true)
    expect(ids(theirs)).not.toContain(mine)
    // the same custom_id in two merchants is two purchases
    expect(ids(await listPurchases(server, other, { custom_id: "list-1" }))).toEqual(ids(theirs))
    expect(ids(await listPurchases(server, m, { custom_id: "list-1" }))).toEqual([mine])
  })
})
