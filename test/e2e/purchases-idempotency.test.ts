/**
 * Idempotency of purchases over real sockets (spec 2.8, 2.10, 4.3, 4.4 rule 2; CONTRACT 5): the /buy
 * repeat matrix, and /buy-sync answers (200, 202, 409 PurchaseFailedResponse) for new and repeated
 * requests. /buy-by-name's cycle and its repeats are in purchases-by-name.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError } from "../support/expectations.js"
import {
  balanceOf,
  bought,
  buy,
  buyBody,
  buyByName,
  byNameBody,
  expectPurchaseCreated,
  expectPurchaseFailed,
  fund,
  fundedMerchant,
  getPurchase,
  itemOf,
  listPurchases,
  loadItem,
  loadItems,
  type Merchant,
  PURCHASE_ENV,
  purchaseIdOf,
  steamIdOf,
  TOKENS,
  uniqueName,
  untilListed,
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
    await untilListed(server, m, name, [named!])
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
