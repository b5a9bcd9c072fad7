/**
 * /buy-by-name over real sockets (spec 2.8, 2.10, 4.3, 4.4 rule 3; CONTRACT 5): cheapest first,
 * retries over items the supplier rejects (each attempt its own refunded purchase under the shared
 * custom_id), the estimated_time filter, NO_ITEMS_FOUND leaving no trace, 402, exhaustion, waiting on
 * a provider top-up, and repeats that never start a second cycle.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError } from "../support/expectations.js"
import {
  balanceOf,
  bought,
  buyBody,
  buyByName,
  byNameBody,
  type Detail,
  expectPurchaseCreated,
  expectPurchaseFailed,
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
    await untilListed(server, m, name, ids.slice(0, 3))
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
    await untilListed(server, m, name, ids)
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
    await untilListed(server, m, name, ids)
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
    await untilListed(server, m, name, [id!])
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
    await untilListed(server, m, name, ids)
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
    await untilListed(server, m, name, ids)
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
    await untilListed(server, m, name, ids)
    const customId = `runout-${randomUUID()}`
    expectError(await buyByName(server, m, byNameBody({ name, maxPrice: 10, customId })), 409, "MERCHANT_PURCHASE_FAILED")
    expect(await byCustomId(m, customId)).toHaveLength(1)
    expectPurchaseFailed(await buyByName(server, m, byNameBody({ name, maxPrice: 10, customId })), "MERCHANT_PRICE_CHANGED", "PRICE_CHANGED")
  })

  it("a provider top-up within the budget is waited for: 200 once acknowledged; a repeat answers the same attempt", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = uniqueName()
    const ids = await loadItems(server, [itemOf(100, { market_hash_name: name }), itemOf(200, { market_hash_name: name })])
    await untilListed(server, m, name, ids)
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
    await untilListed(server, m, name, ids)
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
