/**
 * Concurrent purchases over real sockets (spec 2.2, 4.4; CONTRACT 6): identical requests make one
 * purchase and one debit; buyers racing for one item get one sale and MERCHANT_ITEM_UNAVAILABLE;
 * buys racing for one balance never overdraw it.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { codeOf, errorBody, expectError } from "../support/expectations.js"
import {
  balanceOf,
  bought,
  buy,
  buyBody,
  expectPurchaseCreated,
  fundedMerchant,
  isTerminal,
  itemOf,
  listPurchases,
  loadItem,
  loadItems,
  type Merchant,
  pollUntil,
  PURCHASE_ENV
} from "../support/purchases.js"
import type { JsonResponse } from "../support/server.js"
import { fastLaneAnswers, metricValue, type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: PURCHASE_ENV })
})
afterAll(async () => {
  await server?.stop()
})

/** Every purchase of the merchant terminal. */
const allSettled = (m: Merchant) =>
  pollUntil("every purchase terminal", async () => {
    const list = await listPurchases(server, m)
    return list.every((p) => isTerminal(p.status)) ? list : undefined
  })

const tally = (responses: ReadonlyArray<JsonResponse>) => {
  const out: Record<string, number> = {}
  for (const r of responses) {
    const key = `${r.status} ${codeOf(r) ?? ""}`.trim()
    out[key] = (out[key] ?? 0) + 1
  }
  return out
}

/** The buy engine's transactions and the purchases they created so far (/metrics). */
const buyTransactions = () =>
  Promise.all([metricValue(server, "purchases_buy_transactions_total"), metricValue(server, "purchases_buy_transaction_purchases_total")])

/**
 * Each case runs twice: with keys never used before (a key's first request goes through HttpApi,
 * and the burst's later ones may find it cached) and with keys already used (buys then go through
 * the fast lane, which answers every buy whose body is valid, refusals and repeats included). Both
 * paths buy through the one buy engine.
 */
const paths = ["new keys", "fast lane"] as const

/**
 * Makes the merchants' next buys the fast lane's (their keys in the authentication cache) or not;
 * gives the check that the fast lane answered every one of the `sent` buys (all valid), or at most
 * those after a new key's first.
 */
const prepareKeys = async (path: (typeof paths)[number], merchants: ReadonlyArray<Merchant>) => {
  if (path === "fast lane") { for (const m of merchants) await balanceOf(server, m) }
  const before = await fastLaneAnswers(server, "/buy")
  return async (sent: number) => {
    const answered = await fastLaneAnswers(server, "/buy") - before
    if (path === "fast lane") expect(answered).toBe(sent)
    else expect(answered).toBeLessThan(sent)
  }
}

describe.each(paths)("concurrent purchases (%s)", (path) => {
  it("200 identical /buy at once: one purchase, one debit, every 201 with the same purchase_id", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemId = await loadItem(server, 1_234)
    const body = buyBody({ itemId, maxPrice: 20, customId: `same-${randomUUID()}` })
    const fastLaneAnswered = await prepareKeys(path, [m])
    const responses = await Promise.all(Array.from({ length: 200 }, () => buy(server, m, body)))
    await fastLaneAnswered(200)
    const counts = tally(responses)
    // a concurrent-update conflict may be answered (safe to retry once); nothing else
    expect(Object.keys(counts).filter((k) => k !== "201" && k !== "409 MERCHANT_CONFLICT"), JSON.stringify(counts)).toEqual([])
    const created = responses.filter((r) => r.status === 201).map((r) => expectPurchaseCreated(r, 201))
    expect(created.length).toBeGreaterThan(0)
    const ids = new Set(created.map((c) => c.purchase_id))
    expect(ids.size, JSON.stringify(counts)).toBe(1)
    for (const c of created) expect(c.item.price).toBe(12.34)
    for (const r of responses.filter((x) => x.status === 409)) expectError(r, 409, "MERCHANT_CONFLICT")

    const list = await listPurchases(server, m)
    expect(list.map((p) => p.purchase_id)).toEqual([...ids])
    const b = await balanceOf(server, m)
    expect(b.totalSpent).toBe(1_234)
    expect(b.available).toBe(10_000 - 1_234)
    // a retry of the conflicting ones lands on the same purchase
    const retry = await bought(server, m, body)
    expect(retry.purchase_id).toBe([...ids][0])
    await allSettled(m)
    expect(await balanceOf(server, m)).toEqual({ available: 8_766, onHold: 0, totalDeposited: 10_000, totalSpent: 1_234 })
  })

  it("50 buys of one item by 5 merchants: exactly one sale, every other 409 MERCHANT_ITEM_UNAVAILABLE", async () => {
    const merchants = await Promise.all(Array.from({ length: 5 }, () => fundedMerchant(server, 10_000)))
    const itemId = await loadItem(server, 2_000)
    const attempts = merchants.flatMap((m) => Array.from({ length: 10 }, () => ({ m, body: buyBody({ itemId, maxPrice: 25 }) })))
    const fastLaneAnswered = await prepareKeys(path, merchants)
    const responses = await Promise.all(attempts.map(({ m, body }) => buy(server, m, body)))
    await fastLaneAnswered(attempts.length)
    const counts = tally(responses)
    expect(counts, JSON.stringify(counts)).toEqual({ "201": 1, "409 MERCHANT_ITEM_UNAVAILABLE": 49 })
    for (const r of responses.filter((x) => x.status === 409)) expectError(r, 409, "MERCHANT_ITEM_UNAVAILABLE")
    const winnerIndex = responses.findIndex((r) => r.status === 201)
    const winner = attempts[winnerIndex]!.m
    for (const m of merchants) {
      const list = await listPurchases(server, m)
      const b = await balanceOf(server, m)
      if (m === winner) {
        expect(list.map((p) => p.purchase_id)).toEqual([expectPurchaseCreated(responses[winnerIndex]!, 201).purchase_id])
        expect(b).toMatchObject({ available: 8_000, totalSpent: 2_000 })
      } else {
        expect(list).toEqual([])
        expect(b).toEqual({ available: 10_000, onHold: 0, totalDeposited: 10_000, totalSpent: 0 })
      }
    }
  })

  it("50 distinct buys of 10.00 items on a 100.00 balance: exactly 10 succeed, the rest 402, available ends at 0", async () => {
    const m = await fundedMerchant(server, 10_000)
    const itemIds = await loadItems(server, Array.from({ length: 50 }, () => itemOf(1_000)))
    const fastLaneAnswered = await prepareKeys(path, [m])
    const responses = await Promise.all(itemIds.map((itemId) => buy(server, m, buyBody({ itemId, maxPrice: 10 }))))
    await fastLaneAnswered(itemIds.length)
    const counts = tally(responses)
    expect(counts, JSON.stringify(counts)).toEqual({ "201": 10, "402 MERCHANT_INSUFFICIENT_BALANCE": 40 })
    for (const r of responses.filter((x) => x.status === 402)) expectError(r, 402, "MERCHANT_INSUFFICIENT_BALANCE")
    const created = responses.filter((r) => r.status === 201).map((r) => expectPurchaseCreated(r, 201))
    // each answer's balance_after is a distinct step of the same debits
    expect(created.map((c) => c.balance_after).sort((a, b) => a - b)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90])
    const b = await balanceOf(server, m)
    expect(b).toMatchObject({ available: 0, totalSpent: 10_000, totalDeposited: 10_000 })
    const list = await allSettled(m)
    expect(list).toHaveLength(10)
    expect(new Set(list.map((p) => p.item.id)).size).toBe(10)
    for (const p of list) expect(p.status).toBe("completed")
    expect(await balanceOf(server, m)).toEqual({ available: 0, onHold: 0, totalDeposited: 10_000, totalSpent: 10_000 })
    // the 40 items not bought are still for sale
    const other = await fundedMerchant(server, 1_000)
    const unsold = itemIds.filter((id) => !list.some((p) => p.item.id === id))
    expect(unsold).toHaveLength(40)
    await bought(server, other, buyBody({ itemId: unsold[0]!, maxPrice: 10 }))
  })

  it("25 mixed buys of one merchant at once: each answered as if alone; on the fast lane, several bought per transaction", async () => {
    const m = await fundedMerchant(server, 10_000)
    const [cheap, pricey, huge] = [itemOf(500), itemOf(700), itemOf(20_000)]
    const ids = await loadItems(server, [...Array.from({ length: 14 }, () => cheap), pricey, pricey, pricey, huge, huge])
    const [distinct, [contested, repeated], [...aboveMax], tooDear] = [ids.slice(0, 12), ids.slice(12, 14), ids.slice(14, 17), ids.slice(17)]
    const repeatBody = buyBody({ itemId: repeated!, maxPrice: 5, customId: `rep-${randomUUID()}` })
    const requests = [
      ...distinct.map((itemId) => ({ body: buyBody({ itemId, maxPrice: 5 }), expected: "201" })),
      ...Array.from({ length: 4 }, () => ({ body: buyBody({ itemId: contested!, maxPrice: 5 }), expected: "201 or 409 MERCHANT_ITEM_UNAVAILABLE" })),
      ...Array.from({ length: 3 }, () => ({ body: repeatBody, expected: "201" })),
      ...aboveMax.map((itemId) => ({ body: buyBody({ itemId, maxPrice: 6 }), expected: "409 MERCHANT_PRICE_CHANGED" })),
      ...tooDear.map((itemId) => ({ body: buyBody({ itemId, maxPrice: 300 }), expected: "402 MERCHANT_INSUFFICIENT_BALANCE" })),
      { body: buyBody({ itemId: randomUUID(), maxPrice: 5 }), expected: "404 MERCHANT_ITEM_NOT_FOUND" }
    ]
    const fastLaneAnswered = await prepareKeys(path, [m])
    const [transactionsBefore, boughtBefore] = await buyTransactions()
    const responses = await Promise.all(requests.map(({ body }) => buy(server, m, body)))
    await fastLaneAnswered(requests.length)
    const counts = tally(responses)
    expect(counts, JSON.stringify(counts)).toEqual({
      "201": 12 + 1 + 3,
      "409 MERCHANT_ITEM_UNAVAILABLE": 3,
      "409 MERCHANT_PRICE_CHANGED": 3,
      "402 MERCHANT_INSUFFICIENT_BALANCE": 2,
      "404 MERCHANT_ITEM_NOT_FOUND": 1
    })
    requests.forEach(({ expected }, i) => {
      const got = `${responses[i]!.status} ${codeOf(responses[i]!) ?? ""}`.trim()
      expect(expected.split(" or "), `request ${i}: ${got}`).toContain(got)
      if (responses[i]!.status >= 400) expectError(responses[i]!, responses[i]!.status, errorBody(responses[i]!).code)
    })
    const created = responses.map((r) => r.status === 201 ? expectPurchaseCreated(r, 201) : undefined)
    // one purchase per custom_id; each debit's balance_after is its own step of the balance (a
    // repeat answers the balance of its time, also one of the steps)
    expect(new Set(created.flatMap((c) => c === undefined ? [] : [c.purchase_id])).size).toBe(14)
    const steps = Array.from({ length: 14 }, (_, i) => i * 5 + 30)
    for (const c of created) if (c !== undefined) expect(steps).toContain(c.balance_after)
    const firstBuys = created.filter((c, i) => c !== undefined && requests[i]!.body !== repeatBody)
    expect(new Set(firstBuys.map((c) => c!.balance_after)).size).toBe(13)
    const [transactionsAfter, boughtAfter] = await buyTransactions()
    if (path === "fast lane") {
      expect(boughtAfter - boughtBefore).toBe(14)
      expect(transactionsAfter - transactionsBefore, "buys that arrive together share a transaction").toBeLessThan(14)
    }
    const list = await allSettled(m)
    expect(list).toHaveLength(14)
    expect(new Set(list.map((p) => p.item.id))).toEqual(new Set([...distinct, contested, repeated]))
    expect(await balanceOf(server, m)).toEqual({ available: 3_000, onHold: 0, totalDeposited: 10_000, totalSpent: 7_000 })
    // what was refused is still for sale, and its custom_ids were left free
    const other = await fundedMerchant(server, 1_000)
    await bought(server, other, buyBody({ itemId: aboveMax[0]!, maxPrice: 7 }))
    const [tooDearBody, notFoundBody] = [requests[requests.length - 3]!.body, requests[requests.length - 1]!.body]
    await bought(server, m, { ...tooDearBody, item_id: aboveMax[1]!, max_price: 7 })
    await bought(server, m, { ...notFoundBody, item_id: aboveMax[2]!, max_price: 7 })
  })
})
