/**
 * Idempotency of purchases over real sockets (spec 2.8, 2.10, 4.3, 4.4; CONTRACT 5): the /buy
 * repeat matrix, /buy-sync answers (200, 202, 409 PurchaseFailedResponse) for new and repeated
 * requests, and /buy-by-name: cheapest first, retries over items the supplier rejects (each
 * attempt its own refunded purchase under the shared custom_id), the estimated_time filter,
 * NO_ITEMS_FOUND leaving no trace, 402, exhaustion, and repeats that never start a second cycle.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError } from "../support/expectations.js"
import {
  balanceOf,
  bought,
  buy,
  buyBody,
  buyByName,
  byNameBody,
  type Detail,
  expectPurchaseCreated,
  expectPurchaseFailed,
  fund,
  fundedMerchant,
  getPurchase,
  isTerminal,
  itemOf,
  listedIds,
  listPurchases,
  loadItem,
  loadItems,
  type Merchant,
  pollUntil,
  PURCHASE_ENV,
  purchaseIdOf,
  steamIdOf,
  TOKENS,
  uniqueName,
  watchPurchase
} from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: PURCHASE_ENV })
})
afterAll(async () => {
  await server?.stop()
})

const byCustomId = (m: Merchant, customId: string) => listPurchases(server, m, { custom_id: customId })

/**
 * /buy-sync, repeated while it answers 202 (the wait budget ran out before the provider's verdict:
 * only a very slow worker does that for these tokens); each repeat waits on the same purchase.
 */
const buySyncVerdict = async (m: Merchant, body: unknown) => {
  const first = await buy(server, m, body, "/buy-sync")
  let res = first
  for (let i = 0; res.status === 202 && i < 30; i++) {
    res = await buy(server, m, body, "/buy-sync")
    expect(purchaseIdOf(res)).toBe(purchaseIdOf(first))
  }
  return res
}

/** Waits until the catalogue index lists every id (buy-by-name picks from the live index). */
const listed = (m: Merchant, name: string, ids: ReadonlyArray<string>) =>
  pollUntil(`${ids.length} items of ${name} listed`, async () => {
    const seen = await listedIds(server, m, name)
    return ids.every((id) => seen.includes(id)) ? seen : undefined
  })

describe("/buy repeats (spec 4.4 rule 2)", () => {
  it("the same request twice: 201, the same purchase_id, its current status, the current balance, one debit", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 2_500)
    const body = buyBody({ itemId, maxPrice: 30 })
    const first = await bought(server, m, body)
    expect(first.status).toBe("created")
    expect(first.balance_after).toBe(75)
    const again = await bought(server, m, body)
    expect(again.purchase_id).toBe(first.purchase_id)
    expect(again.created_at).toBe(first.created_at)

    const { final } = await watchPurchase(server, m, first.purchase_id)
    expect(final.status).toBe("completed")
    // another debit and deposit move the balance: a repeat answers the current one
    await fund(server, m, 1_000)
    const later = await bought(server, m, body)
    expect(later).toMatchObject({ purchase_id: first.purchase_id, status: "completed", balance_after: 85, custom_id: body.custom_id })
    expect(later.item).toEqual(first.item)
    expect(await balanceOf(server, m)).toEqual({ available: 8_500, onHold: 0, totalDeposited: 11_000, totalSpent: 2_500 })
    expect((await byCustomId(m, body.custom_id)).map((p) => p.purchase_id)).toEqual([first.purchase_id])
  })

  it("a different item, trade URL or recipient is 409 MERCHANT_DUPLICATE_CUSTOM_ID; a matching target_steam_id is a match", async () => {
    const m = await fundedMerchant(server, 10_000)
    const [itemId, otherItem] = await loadItems(server, [itemOf(1_000), itemOf(1_000)])
    const body = buyBody({ itemId: itemId!, maxPrice: 10, token: "abcd1234", partner: 5555 })
    const first = await bought(server, m, body)
    const mismatches = [
      { ...body, item_id: otherItem },
      { ...body, target_trade_url: body.target_trade_url.replace("abcd1234", "abcd1235") },
      { ...body, target_trade_url: body.target_trade_url.replace("partner=5555", "partner=5556") },
      { ...body, target_trade_url: body.target_trade_url.replace("partner=5555", "partner=5556"), target_steam_id: steamIdOf(5556) }
    ]
    for (const mismatch of mismatches) {
      expectError(await buy(server, m, mismatch), 409, "MERCHANT_DUPLICATE_CUSTOM_ID")
      expectError(await buy(server, m, mismatch, "/buy-sync"), 409, "MERCHANT_DUPLICATE_CUSTOM_ID")
    }
    // the recipient derived from the URL is the same whether target_steam_id is sent or not
    const withSteamId = await bought(server, m, { ...body, target_steam_id: steamIdOf(5555) })
    expect(withSteamId.purchase_id).toBe(first.purchase_id)
    // other fields are validated first: a bad steam id is still 400, not a duplicate
    expectError(await buy(server, m, { ...body, target_steam_id: steamIdOf(5556) }), 400, "MERCHANT_STEAM_ID_MISMATCH")
    expect(await balanceOf(server, m)).toMatchObject({ totalSpent: 1_000, available: 9_000 })
    expect(await byCustomId(m, body.custom_id)).toHaveLength(1)
    // the other item was never touched
    await bought(server, m, buyBody({ itemId: otherItem!, maxPrice: 10 }))
  })

  it("max_price below the saved price is a duplicate; equal or above is a match (compared exactly)", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 1_000)
    const body = buyBody({ itemId, maxPrice: 12 })
    const first = await bought(server, m, body)
    for (const maxPrice of [9.99, 9.999]) {
      expectError(await buy(server, m, { ...body, max_price: maxPrice }), 409, "MERCHANT_DUPLICATE_CUSTOM_ID")
    }
    for (const maxPrice of [10, 10.001, 11, 1_000_000]) {
      const res = await bought(server, m, { ...body, max_price: maxPrice })
      expect(res.purchase_id).toBe(first.purchase_id)
    }
    expect((await balanceOf(server, m)).totalSpent).toBe(1_000)
  })

  it("/buy then /buy-sync with the same parameters is a match, and so is /buy-sync then /buy", async () => {
    const m = await fundedMerchant(server, 10_000)
    const [a, b] = await loadItems(server, [itemOf(700), itemOf(800)])
    const first = await bought(server, m, buyBody({ itemId: a!, maxPrice: 7, customId: "mix-1" }))
    const sync = await buy(server, m, buyBody({ itemId: a!, maxPrice: 7, customId: "mix-1" }), "/buy-sync")
    expect([200, 202]).toContain(sync.status)
    expect(expectPurchaseCreated(sync, sync.status).purchase_id).toBe(first.purchase_id)

    const syncFirst = await buy(server, m, buyBody({ itemId: b!, maxPrice: 8, customId: "mix-2" }), "/buy-sync")
    expect([200, 202]).toContain(syncFirst.status)
    const thenBuy = await bought(server, m, buyBody({ itemId: b!, maxPrice: 8, customId: "mix-2" }))
    expect(thenBuy.purchase_id).toBe(expectPurchaseCreated(syncFirst, syncFirst.status).purchase_id)
    expect((await balanceOf(server, m)).totalSpent).toBe(1_500)
  })

  it("/buy-by-name with a /buy custom_id reads that purchase; /buy with a by-name custom_id is a duplicate", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 600)
    const first = await bought(server, m, buyBody({ itemId, maxPrice: 6, customId: "cross-1" }))
    await watchPurchase(server, m, first.purchase_id)
    // by custom_id alone: the name, price and URL are not compared
    const res = await buyByName(server, m, byNameBody({ name: "Not The Same Name", maxPrice: 1, customId: "cross-1", token: "zzzzzzzz" }))
    expect(expectPurchaseCreated(res, 200).purchase_id).toBe(first.purchase_id)
    expect(await byCustomId(m, "cross-1")).toHaveLength(1)

    const name = uniqueName()
    const [named] = await loadItems(server, [itemOf(500, { market_hash_name: name })])
    await listed(m, name, [named!])
    const byName = expectPurchaseCreated(await buyByName(server, m, byNameBody({ name, maxPrice: 5, customId: "cross-2" })), 200)
    expectError(await buy(server, m, buyBody({ itemId: named!, maxPrice: 5, customId: "cross-2" })), 409, "MERCHANT_DUPLICATE_CUSTOM_ID")
    expect((await byCustomId(m, "cross-2")).map((p) => p.purchase_id)).toEqual([byName.purchase_id])
    expect((await balanceOf(server, m)).totalSpent).toBe(1_100)
  })
})

describe("/buy-sync answers (spec 4.3)", () => {
  it("200 once the provider acknowledged, delivery possibly still running", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 900)
    const res = await buySyncVerdict(m, buyBody({ itemId, maxPrice: 9 }))
    const body = expectPurchaseCreated(res, 200)
    expect(["processing", "sent_to_steam", "completed"]).toContain(body.status)
    expect(body.balance_after).toBe(91)
    expect((await watchPurchase(server, m, body.purchase_id)).final.status).toBe("completed")
  })

  it.each([TOKENS.slowack, TOKENS.topup])("202 when the wait budget ends first (%s), and a repeat waits on the same purchase", async (token) => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 900)
    const request = buyBody({ itemId, maxPrice: 9, token })
    const body = expectPurchaseCreated(await buy(server, m, request, "/buy-sync"), 202)
    expect(["created", "processing"]).toContain(body.status)
    expect(body.balance_after).toBe(91)
    const repeat = await buy(server, m, request, "/buy-sync")
    expect([200, 202]).toContain(repeat.status)
    expect(expectPurchaseCreated(repeat, repeat.status).purchase_id).toBe(body.purchase_id)
    expect((await watchPurchase(server, m, body.purchase_id)).final.status).toBe("completed")
    const done = expectPurchaseCreated(await buy(server, m, request, "/buy-sync"), 200)
    expect(done).toMatchObject({ purchase_id: body.purchase_id, status: "completed", balance_after: 91 })
    expect(await byCustomId(m, request.custom_id)).toHaveLength(1)
    expect(await balanceOf(server, m)).toEqual({ available: 9_100, onHold: 0, totalDeposited: 10_000, totalSpent: 900 })
  })

  it.each([[TOKENS.private, "INVENTORY_PRIVATE"], [TOKENS.badtoken, "INVALID_TRADE_URL"]])(
    "409 PurchaseFailedResponse for a purchase rejected before acknowledgement (%s)",
    async (token, code) => {
      const m = await fundedMerchant(server, 10_000)
      const itemId = await loadItem(server, 900)
      const request = buyBody({ itemId, maxPrice: 9, token })
      const failed = expectPurchaseFailed(await buySyncVerdict(m, request), "MERCHANT_PURCHASE_FAILED", code)
      expect(failed).toMatchObject({ custom_id: request.custom_id, trade_offer_id: null, trade_offer_url: null })
      const detail = await getPurchase(server, m, failed.purchase_id)
      expect(detail.status).toBe("failed")
      expect(detail.failure).toMatchObject({ code, refunded_amount: 9 })
      // the repeat: the same body, no second purchase
      const again = expectPurchaseFailed(await buy(server, m, request, "/buy-sync"), "MERCHANT_PURCHASE_FAILED", code)
      expect(again.purchase_id).toBe(failed.purchase_id)
      // /buy of the same request answers the failed purchase as it is now
      expect(await bought(server, m, request)).toMatchObject({ purchase_id: failed.purchase_id, status: "failed" })
      expect(await balanceOf(server, m)).toEqual({ available: 10_000, onHold: 0, totalDeposited: 10_000, totalSpent: 0 })
    }
  )

  it("a purchase declined after the offer: 200 first, then a repeat gets 409 with failure and trade offer", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 900)
    const request = buyBody({ itemId, maxPrice: 9, token: TOKENS.declined })
    const first = await buySyncVerdict(m, request)
    // acknowledged before the decline (200), unless the decline came within the wait (409)
    expect([200, 409]).toContain(first.status)
    const id = purchaseIdOf(first)
    const { final } = await watchPurchase(server, m, id)
    expect(final.failure).toMatchObject({ code: "TRADE_DECLINED", refunded_amount: 9 })
    const again = expectPurchaseFailed(await buy(server, m, request, "/buy-sync"), "MERCHANT_PURCHASE_FAILED", "TRADE_DECLINED")
    expect(again).toMatchObject({
      purchase_id: id,
      custom_id: request.custom_id,
      failure: { code: "TRADE_DECLINED", message: final.failure!.message },
      trade_offer_id: final.trade_offer_id,
      trade_offer_url: final.trade_offer_url
    })
    expect(again.trade_offer_id).not.toBeNull()
    expect(await balanceOf(server, m)).toEqual({ available: 10_000, onHold: 0, totalDeposited: 10_000, totalSpent: 0 })
  })
})

describe("/buy-by-name (spec 4.3, 4.4 rule 3)", () => {
  it("buys the cheapest matching item, exact and case-sensitive, within max_price", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const ids = await loadItems(server, [
      itemOf(300, { market_hash_name: name }),
      itemOf(100, { market_hash_name: name }),
      itemOf(200, { market_hash_name: name }),
      itemOf(50, { market_hash_name: name.toLowerCase() }),
      itemOf(60, { market_hash_name: `${name} ` })
    ])
    await listed(m, name, ids.slice(0, 3))
    const res = expectPurchaseCreated(await buyByName(server, m, byNameBody({ name, maxPrice: 2.5 })), 200)
    expect(res.item).toMatchObject({ market_hash_name: name, price: 1 })
    expect(res.balance_after).toBe(99)
    const detail = await getPurchase(server, m, res.purchase_id)
    expect(detail.item.id).toBe(ids[1])
    // the next cheapest is next; above max_price nothing matches
    const second = expectPurchaseCreated(await buyByName(server, m, byNameBody({ name, maxPrice: 2 })), 200)
    expect((await getPurchase(server, m, second.purchase_id)).item.id).toBe(ids[2])
    expectError(await buyByName(server, m, byNameBody({ name, maxPrice: 2.99 })), 400, "MERCHANT_NO_ITEMS_FOUND")
  })

  it("skips items the supplier rejects: each attempt is its own refunded purchase under the shared custom_id", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const ids = await loadItems(server, [
      itemOf(100, { market_hash_name: name, sim: { acquire: "unavailable" } }),
      itemOf(150, { market_hash_name: name, sim: { acquire: "price_changed" } }),
      itemOf(200, { market_hash_name: name }),
      itemOf(250, { market_hash_name: name })
    ])
    await listed(m, name, ids)
    const customId = `retry-${randomUUID()}`
    const res = expectPurchaseCreated(await buyByName(server, m, byNameBody({ name, maxPrice: 3, customId })), 200)
    expect(res).toMatchObject({ custom_id: customId, item: { price: 2 } })
    const attempts = await byCustomId(m, customId)
    expect(attempts).toHaveLength(3)
    const [third, second, first] = attempts as [Detail, Detail, Detail]
    expect(third.purchase_id).toBe(res.purchase_id)
    expect(new Set(attempts.map((p) => p.purchase_id)).size).toBe(3)
    expect(first).toMatchObject({ status: "failed", price: 1, item: { id: ids[0] }, failure: { code: "ITEM_UNAVAILABLE", refunded_amount: 1 } })
    expect(second).toMatchObject({ status: "failed", price: 1.5, item: { id: ids[1] }, failure: { code: "PRICE_CHANGED", refunded_amount: 1.5 } })
    expect(third.item.id).toBe(ids[2])
    await watchPurchase(server, m, res.purchase_id)
    expect(await balanceOf(server, m)).toEqual({ available: 9_800, onHold: 0, totalDeposited: 10_000, totalSpent: 200 })
    // the 2.50 item was not touched
    expect(await listedIds(server, m, name)).toEqual([ids[3]])
  })

  it("estimated_time excludes slower items and items of unknown delivery time", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const ids = await loadItems(server, [
      itemOf(100, { market_hash_name: name, estimated_delivery_minutes: 60 }),
      itemOf(110, { market_hash_name: name, estimated_delivery_minutes: null }),
      itemOf(120, { market_hash_name: name, estimated_delivery_minutes: 31 }),
      itemOf(130, { market_hash_name: name, estimated_delivery_minutes: 30 }),
      itemOf(140, { market_hash_name: name, estimated_delivery_minutes: 10 })
    ])
    await listed(m, name, ids)
    const res = expectPurchaseCreated(await buyByName(server, m, byNameBody({ name, maxPrice: 5, estimatedTime: 30 })), 200)
    expect(res.item).toMatchObject({ price: 1.3, estimated_delivery_minutes: 30 })
    const tight = expectPurchaseCreated(await buyByName(server, m, byNameBody({ name, maxPrice: 5, estimatedTime: 10 })), 200)
    expect(tight.item).toMatchObject({ price: 1.4, estimated_delivery_minutes: 10 })
    expectError(await buyByName(server, m, byNameBody({ name, maxPrice: 5, estimatedTime: 30 })), 400, "MERCHANT_NO_ITEMS_FOUND")
    // null estimated_time: no filter
    const any = expectPurchaseCreated(await buyByName(server, m, byNameBody({ name, maxPrice: 5, estimatedTime: null })), 200)
    expect(any.item.price).toBe(1)
  })

  it("NO_ITEMS_FOUND records nothing: the same custom_id works once an item exists", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const customId = `none-${randomUUID()}`
    const body = byNameBody({ name, maxPrice: 5, customId })
    expectError(await buyByName(server, m, body), 400, "MERCHANT_NO_ITEMS_FOUND")
    expectError(await buyByName(server, m, body), 400, "MERCHANT_NO_ITEMS_FOUND")
    expect(await byCustomId(m, customId)).toEqual([])
    expect(await balanceOf(server, m)).toMatchObject({ available: 10_000, totalSpent: 0 })
    const [id] = await loadItems(server, [itemOf(400, { market_hash_name: name })])
    await listed(m, name, [id!])
    const res = expectPurchaseCreated(await buyByName(server, m, body), 200)
    expect((await getPurchase(server, m, res.purchase_id)).item.id).toBe(id)
    // and a /buy may use a custom_id that only ever got NO_ITEMS_FOUND
    const other = `none-${randomUUID()}`
    expectError(await buyByName(server, m, byNameBody({ name: uniqueName(), maxPrice: 5, customId: other })), 400, "MERCHANT_NO_ITEMS_FOUND")
    await bought(server, m, buyBody({ itemId: await loadItem(server, 100), maxPrice: 1, customId: other }))
  })

  it("402 against the cheapest live price, no retry, nothing recorded", async () => {
    const m = await fundedMerchant(server, 150)
    const name = uniqueName()
    const ids = await loadItems(server, [itemOf(200, { market_hash_name: name }), itemOf(300, { market_hash_name: name })])
    await listed(m, name, ids)
    const customId = `poor-${randomUUID()}`
    expectError(await buyByName(server, m, byNameBody({ name, maxPrice: 10, customId })), 402, "MERCHANT_INSUFFICIENT_BALANCE")
    expect(await byCustomId(m, customId)).toEqual([])
    expect(await balanceOf(server, m)).toMatchObject({ available: 150, totalSpent: 0 })
    expect((await listedIds(server, m, name)).sort()).toEqual([...ids].sort())
  })

  it("exhaustion: 5 rejected attempts give 409 MERCHANT_PURCHASE_FAILED, all refunded; a repeat starts nothing", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const ids = await loadItems(server, [100, 110, 120, 130, 140, 150].map((c) => itemOf(c, { market_hash_name: name, sim: { acquire: "unavailable" } })))
    await listed(m, name, ids)
    const customId = `exhaust-${randomUUID()}`
    const body = byNameBody({ name, maxPrice: 10, customId })
    expectError(await buyByName(server, m, body), 409, "MERCHANT_PURCHASE_FAILED")
    const attempts = await byCustomId(m, customId)
    expect(attempts).toHaveLength(5)
    expect(attempts.map((p) => p.item.id)).toEqual(ids.slice(0, 5).reverse())
    for (const p of attempts) expect(p.failure).toMatchObject({ code: "ITEM_UNAVAILABLE", refunded_amount: p.price })
    expect(await balanceOf(server, m)).toEqual({ available: 10_000, onHold: 0, totalDeposited: 10_000, totalSpent: 0 })
    // the repeat reads the latest attempt: PurchaseFailedResponse with the HTTP code of its reason
    const repeat = expectPurchaseFailed(await buyByName(server, m, body), "MERCHANT_ITEM_UNAVAILABLE", "ITEM_UNAVAILABLE")
    expect(repeat.purchase_id).toBe(attempts[0]!.purchase_id)
    expect(await byCustomId(m, customId)).toHaveLength(5)
    expect(await listedIds(server, m, name)).toEqual([ids[5]])
  })

  it("items running out after an attempt is exhaustion too (409 Error body)", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const ids = await loadItems(server, [itemOf(100, { market_hash_name: name, sim: { acquire: "price_changed" } })])
    await listed(m, name, ids)
    const customId = `runout-${randomUUID()}`
    expectError(await buyByName(server, m, byNameBody({ name, maxPrice: 10, customId })), 409, "MERCHANT_PURCHASE_FAILED")
    expect(await byCustomId(m, customId)).toHaveLength(1)
    expectPurchaseFailed(await buyByName(server, m, byNameBody({ name, maxPrice: 10, customId })), "MERCHANT_PRICE_CHANGED", "PRICE_CHANGED")
  })

  it("a provider top-up within the budget is waited for: 200 once acknowledged; a repeat answers the same attempt", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const ids = await loadItems(server, [itemOf(100, { market_hash_name: name }), itemOf(200, { market_hash_name: name })])
    await listed(m, name, ids)
    // topup000: the provider tops up for 1.5 x BUY_SYNC_WAIT (3 s), then acknowledges, within the 6 s budget
    const body = byNameBody({ name, maxPrice: 10, token: TOKENS.topup })
    // by name, unlike /buy-sync, a top-up is no answer: 202 is only for a budget that ran out (spec 4.3)
    const res = expectPurchaseCreated(await buyByName(server, m, body), 200)
    expect(["processing", "sent_to_steam", "completed"]).toContain(res.status)
    const again = expectPurchaseCreated(await buyByName(server, m, body), 200)
    expect(again.purchase_id).toBe(res.purchase_id)
    expect(await byCustomId(m, body.custom_id)).toHaveLength(1)
    expect((await balanceOf(server, m)).totalSpent).toBe(100)
  })

  it("202 when the budget ends with the attempt in flight (here, waiting on a top-up); a repeat answers the same attempt", async () => {
    const short = await startServer({ env: { ...PURCHASE_ENV, BY_NAME_BUDGET_SECONDS: "1" } })
    try {
      const m = await fundedMerchant(short, 10_000)
      const name = uniqueName()
      const ids = await loadItems(short, [itemOf(100, { market_hash_name: name }), itemOf(200, { market_hash_name: name })])
      await pollUntil("the items listed", async () => (await listedIds(short, m, name)).length === ids.length ? true : undefined)
      const body = byNameBody({ name, maxPrice: 10, token: TOKENS.topup })
      const res = expectPurchaseCreated(await buyByName(short, m, body), 202)
      expect(["created", "processing"]).toContain(res.status)
      const again = expectPurchaseCreated(await buyByName(short, m, body), 202)
      expect(again.purchase_id).toBe(res.purchase_id)
      await watchPurchase(short, m, res.purchase_id)
      const done = expectPurchaseCreated(await buyByName(short, m, body), 200)
      expect(done).toMatchObject({ purchase_id: res.purchase_id, status: "completed" })
      expect(await listPurchases(short, m, { custom_id: body.custom_id })).toHaveLength(1)
      expect((await balanceOf(short, m)).totalSpent).toBe(100)
    } finally {
      await short.stop()
    }
  })

  it("a repeat while the cycle runs and after it returns the latest attempt and never starts a second cycle", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const ids = await loadItems(server, [
      itemOf(100, { market_hash_name: name, sim: { acquire: "unavailable" } }),
      itemOf(200, { market_hash_name: name }),
      itemOf(300, { market_hash_name: name }),
      itemOf(400, { market_hash_name: name })
    ])
    await listed(m, name, ids)
    const customId = `cycle-${randomUUID()}`
    // slowack0: the provider acknowledges only after 1.5 x BUY_SYNC_WAIT (3 s), within the 6 s budget
    const body = byNameBody({ name, maxPrice: 10, customId, token: TOKENS.slowack })
    const original = buyByName(server, m, body)
    // the original must reach the server first (a repeat sent at once can overtake it on another
    // connection and start the cycle itself): wait for the cycle's first attempt
    await pollUntil("the first attempt", async () => ((await byCustomId(m, customId)).length > 0 ? true : undefined))
    // repeats while the cycle runs: each answers the latest attempt of this cycle, until the second
    // one shows (202 while unacknowledged; 200 if a loaded machine let the acknowledgement come first)
    const during: Array<{ status: number; id: string }> = []
    await pollUntil("a repeat that sees the second attempt", async () => {
      const r = await buyByName(server, m, body)
      expect([200, 202, 409], r.text).toContain(r.status)
      if (r.status === 409) expectPurchaseFailed(r, "MERCHANT_ITEM_UNAVAILABLE", "ITEM_UNAVAILABLE")
      else expectPurchaseCreated(r, r.status)
      during.push({ status: r.status, id: purchaseIdOf(r) })
      if (r.status === 409) return undefined
      const itemId = (await getPurchase(server, m, purchaseIdOf(r))).item.id
      // only the second attempt (the first item is unavailable) can be acknowledged
      if (r.status === 200) expect(itemId).toBe(ids[1])
      return itemId === ids[1] ? true : undefined
    })
    const answered = expectPurchaseCreated(await original, 200)
    expect((await getPurchase(server, m, answered.purchase_id)).item.id).toBe(ids[1])
    const attemptIds = (await byCustomId(m, customId)).map((p) => p.purchase_id)
    for (const d of during) expect(attemptIds).toContain(d.id)
    expect(during[during.length - 1]!.id).toBe(answered.purchase_id)

    const after = expectPurchaseCreated(await buyByName(server, m, body), 200)
    expect(after.purchase_id).toBe(answered.purchase_id)
    // by custom_id alone: another name, price ceiling and URL still read the same attempt
    const other = await buyByName(server, m, byNameBody({ name: uniqueName(), maxPrice: 0.5, customId, token: "zzzzzzzz" }))
    expect(expectPurchaseCreated(other, 200).purchase_id).toBe(answered.purchase_id)

    const all = await byCustomId(m, customId)
    expect(all).toHaveLength(2)
    expect(all.map((p) => p.item.id)).toEqual([ids[1], ids[0]])
    await watchPurchase(server, m, answered.purchase_id)
    expect(await balanceOf(server, m)).toEqual({ available: 9_800, onHold: 0, totalDeposited: 10_000, totalSpent: 200 })
    expect((await listedIds(server, m, name)).sort()).toEqual([ids[2]!, ids[3]!].sort())
    for (const p of all) expect(isTerminal((await getPurchase(server, m, p.purchase_id)).status)).toBe(true)
  })
})
