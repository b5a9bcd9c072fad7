/**
 * A model-based test of the balance (spec 2.2; CONTRACT 6) against one real server: random
 * sequences of buys (every simulator token, refunding or not), deposits and pauses. After every
 * step GET /balance must satisfy available + total_spent = total_deposited to the cent, nothing
 * negative, on_hold = the prices of the in-flight purchases that GET /purchases shows, and
 * available = deposits - prices + applied refunds whenever the purchases are read stable around
 * the balance. The model bounds what a buy may answer (201 or 402) given the refunds that may or
 * may not have happened yet, and at the end, once everything settled, predicts the exact balance.
 */
import * as fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError } from "../support/expectations.js"
import {
  balanceOf,
  buy,
  buyBody,
  cents,
  creditedCents,
  type Detail,
  expectPurchaseCreated,
  IN_FLIGHT,
  isTerminal,
  listPurchases,
  loadItem,
  type Merchant,
  pollUntil,
  PURCHASE_ENV,
  sleep,
  TOKENS
} from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: PURCHASE_ENV })
})
afterAll(async () => {
  await server?.stop()
})

/** What each token ends as (CONTRACT 5.1): refunded in full or not, and the failure. */
const OUTCOMES: Record<string, { refunded: boolean; status: "completed" | "failed"; code: string | null; refund: number | null | "price" }> = {
  abcd1234: { refunded: false, status: "completed", code: null, refund: null },
  [TOKENS.declined]: { refunded: true, status: "failed", code: "TRADE_DECLINED", refund: "price" },
  [TOKENS.expired]: { refunded: true, status: "failed", code: "TRADE_EXPIRED", refund: "price" },
  [TOKENS.private]: { refunded: true, status: "failed", code: "INVENTORY_PRIVATE", refund: "price" },
  [TOKENS.badtoken]: { refunded: true, status: "failed", code: "INVALID_TRADE_URL", refund: "price" },
  [TOKENS.slowack]: { refunded: false, status: "completed", code: null, refund: null },
  [TOKENS.topup]: { refunded: false, status: "completed", code: null, refund: null },
  [TOKENS.revbuyer]: { refunded: false, status: "failed", code: "REVERTED_BY_BUYER", refund: 0 },
  [TOKENS.revseller]: { refunded: true, status: "failed", code: "REVERTED_BY_SELLER", refund: "price" },
  [TOKENS.review]: { refunded: false, status: "failed", code: "MANUAL_REVIEW", refund: null }
}

type Action =
  | { readonly kind: "deposit"; readonly sentCents: number }
  | { readonly kind: "buy"; readonly priceCents: number; readonly token: string }
  | { readonly kind: "wait"; readonly ms: number }

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("deposit" as const),
      sentCents: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 100, max: 20_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 500_000, max: 520_000 }) })
    })
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("buy" as const),
      priceCents: fc.oneof(fc.integer({ min: 1, max: 6_000 }), fc.constantFrom(1, 99, 100, 1_000)),
      token: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom("abcd1234", TOKENS.declined, TOKENS.expired, TOKENS.private, TOKENS.badtoken) },
        { weight: 3, arbitrary: fc.constantFrom(TOKENS.revbuyer, TOKENS.revseller, TOKENS.review) },
        { weight: 1, arbitrary: fc.constantFrom(TOKENS.slowack, TOKENS.topup) }
      )
    })
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 400 }) }) }
)

interface Bought {
  readonly id: string
  readonly priceCents: number
  readonly token: string
}

class Model {
  depositedCents = 0
  readonly bought: Array<Bought> = []
  /** Available if no refund has been applied yet. */
  get lower() {
    return this.depositedCents - this.bought.reduce((s, p) => s + p.priceCents, 0)
  }
  /** Available if every refund to come has been applied. */
  get upper() {
    return this.lower + this.bought.filter((p) => OUTCOMES[p.token]!.refunded).reduce((s, p) => s + p.priceCents, 0)
  }
}

const refundedCents = (p: Detail) => (p.failure?.refunded_amount ? cents(p.failure.refunded_amount) : 0)

/** The checks of every step. */
const check = async (model: Model, m: Merchant) => {
  const snapshot = (list: ReadonlyArray<Detail>) => JSON.stringify(list.map((p) => [p.purchase_id, p.status, p.failure?.refunded_amount ?? null]))
  for (let attempt = 0; attempt < 100; attempt++) {
    const before = await listPurchases(server, m)
    const b = await balanceOf(server, m) // available + total_spent = total_deposited, nothing negative
    const after = await listPurchases(server, m)
    expect(b.totalDeposited).toBe(model.depositedCents)
    expect(b.available).toBeGreaterThanOrEqual(model.lower)
    expect(b.available).toBeLessThanOrEqual(model.upper)
    expect(after.map((p) => p.purchase_id).sort()).toEqual(model.bought.map((p) => p.id).sort())
    if (snapshot(before) !== snapshot(after)) continue // a purchase moved while the balance was read
    const inFlight = after.filter((p) => IN_FLIGHT.includes(p.status)).reduce((s, p) => s + cents(p.price), 0)
    const refunds = after.reduce((s, p) => s + refundedCents(p), 0)
    const prices = after.reduce((s, p) => s + cents(p.price), 0)
    expect(b.onHold, "on_hold = prices of the in-flight purchases").toBe(inFlight)
    expect(b.totalSpent, "total_spent = debits - refunds").toBe(prices - refunds)
    expect(b.available).toBe(model.depositedCents - prices + refunds)
    return
  }
  throw new Error("the purchases never held still around a balance read")
}

const run = async (model: Model, m: Merchant, action: Action) => {
  switch (action.kind) {
    case "deposit": {
      const deposit = await server.deposit(m.id, action.sentCents / 100)
      expect(cents(deposit.amount)).toBe(creditedCents(action.sentCents))
      model.depositedCents += creditedCents(action.sentCents)
      return
    }
    case "buy": {
      const itemId = await loadItem(server, action.priceCents)
      const { lower, upper } = model
      const res = await buy(server, m, buyBody({ itemId, maxPrice: action.priceCents / 100, token: action.token }))
      if (res.status === 201) {
        const created = expectPurchaseCreated(res, 201)
        expect(action.priceCents, "bought although no refund could cover it").toBeLessThanOrEqual(upper)
        expect(cents(created.item.price)).toBe(action.priceCents)
        expect(cents(created.balance_after)).toBeGreaterThanOrEqual(lower - action.priceCents)
        expect(cents(created.balance_after)).toBeLessThanOrEqual(upper - action.priceCents)
        model.bought.push({ id: created.purchase_id, priceCents: action.priceCents, token: action.token })
      } else {
        expectError(res, 402, "MERCHANT_INSUFFICIENT_BALANCE")
        expect(action.priceCents, "refused although the balance covered it").toBeGreaterThan(lower)
      }
      return
    }
    case "wait":
      await sleep(action.ms)
  }
}

describe("the ledger under random buys, deposits and waits (spec 2.2)", () => {
  it("keeps available + total_spent = total_deposited and on_hold = in-flight prices at every step, and ends exact", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 15, maxLength: 25 }), async (actions) => {
        const created = await server.createMerchant()
        const m: Merchant = { id: created.id, apiKey: created.apiKey }
        const model = new Model()
        for (const action of actions) {
          await run(model, m, action)
          await check(model, m)
        }
        // everything settles: terminal, and the reversal tokens reversed
        const byId = new Map(model.bought.map((p) => [p.id, p]))
        const final = await pollUntil("every purchase settled", async () => {
          const list = await listPurchases(server, m)
          return list.every((p) => {
              const token = byId.get(p.purchase_id)!.token
              return token === TOKENS.revbuyer || token === TOKENS.revseller ? p.status === "failed" : isTerminal(p.status)
            }) ?
            list :
            undefined
        }, 120_000)
        for (const p of final) {
          const bought = byId.get(p.purchase_id)!
          const expected = OUTCOMES[bought.token]!
          expect({ token: bought.token, status: p.status, code: p.failure?.code ?? null }).toEqual(
            { token: bought.token, status: expected.status, code: expected.code }
          )
          if (p.failure !== null) {
            expect(p.failure.refunded_amount).toBe(expected.refund === "price" ? bought.priceCents / 100 : expected.refund)
          }
        }
        const spent = model.bought.filter((p) => !OUTCOMES[p.token]!.refunded).reduce((s, p) => s + p.priceCents, 0)
        expect(await balanceOf(server, m)).toEqual({
          available: model.depositedCents - spent,
          onHold: 0,
          totalDeposited: model.depositedCents,
          totalSpent: spent
        })
      }),
      { numRuns: 6, endOnFailure: true }
    )
  }, 600_000)
})
