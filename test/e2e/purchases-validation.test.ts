/**
 * Purchase requests refused before a purchase exists, over real sockets (spec 2.8, 4.3, 7.2;
 * CONTRACT 2, 5, 6): /buy, /buy-sync and /buy-by-name validation (each bad request changes nothing,
 * the boundaries are accepted), the pre-checks against the live item (404, 409 unavailable, exact
 * max_price comparison, 402 against the live price), and merchant status before validation.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { codeOf, expectError, field } from "../support/expectations.js"
import { INVALID_BUY_FIELDS, INVALID_BY_NAME_FIELDS } from "../support/invalid-purchase-fields.js"
import {
  balanceOf,
  bought,
  buy,
  buyBody,
  buyByName,
  byNameBody,
  fundedMerchant,
  getPurchase,
  itemOf,
  listPurchases,
  loadItem,
  loadItems,
  type Merchant,
  PURCHASE_ENV,
  steamIdOf,
  uniqueName
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
  it.each(["/buy", "/buy-sync"] as const)("%s: every invalid field gets its own code and leaves the balance unchanged", async (path) => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 1_000)
    const before = await balanceOf(server, m)
    const valid = buyBody({ itemId, maxPrice: 20 })
    for (const [what, change, code] of INVALID_BUY_FIELDS) {
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
    for (const [change, code] of INVALID_BY_NAME_FIELDS) {
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
