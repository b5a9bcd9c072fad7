/**
 * The purchase worker in process (Purchases, the worker and a scripted provider on the test
 * database, no HTTP): a bought purchase is placed and followed to its end; a completed one leaves
 * on_hold without crediting anything, a failed refundable one is refunded exactly once, each with
 * its events; the balance equals its ledger.
 */
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ChangeLog } from "../../src/Catalogue/ChangeLog.js"
import { Ledger } from "../../src/Ledger/Ledger.js"
import { type OrderStatus, PurchaseProvider } from "../../src/Providers/PurchaseProvider.js"
import { BuyEngine } from "../../src/Purchases/BuyEngine.js"
import { PurchasesLive } from "../../src/Purchases/Layer.js"
import { inProcess, liveItem, RECIPIENT } from "../support/in-process.js"

/** How the scripted provider ends each item's order. */
const endings = new Map<string, "completed" | "failed">()
const final = (outcome: OrderStatus["outcome"]): OrderStatus => ({
  waitingTopUp: false,
  acknowledged: true,
  tradeOffer: outcome._tag === "completed" ? { id: "offer-1", url: "https://steamcommunity.com/tradeoffer/1/" } : undefined,
  outcome,
  reversal: undefined,
  nextChangeAt: undefined
})
const statusOf = (itemId: string | null) =>
  final(
    itemId !== null && endings.get(itemId) === "failed"
      ? { _tag: "failed", code: "INVENTORY_PRIVATE", message: "the buyer's inventory is private", refundable: true }
      : { _tag: "completed" }
  )
const itemByRequest = new Map<string, string | null>()
const ProviderTest = Layer.succeed(PurchaseProvider, {
  placeOrders: (requests) =>
    Effect.sync(() =>
      requests.map((request) => {
        itemByRequest.set(request.requestId, request.itemId)
        return statusOf(request.itemId)
      })
    ),
  orderStatus: (requestId) => Effect.sync(() => statusOf(itemByRequest.get(requestId) ?? null))
})

// the purchases feature as the service runs it, with a scripted provider in place of the simulated one
const WorkerTest = inProcess(Layer.mergeAll(PurchasesLive, Ledger.Default, ChangeLog.Default).pipe(Layer.provide(ProviderTest)))

/**
 * Polls until the purchase is final, and a failed one's refund recorded (the worker runs in the
 * background; nothing here depends on how soon), 60 s at most.
 */
const finalStatus = (purchaseId: string) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    for (let tries = 0; tries < 1200; tries++) {
      const [row] = yield* sql<{ status: string; refunded: string | null }>`
        SELECT status, refunded_cents AS refunded FROM purchases WHERE id = ${purchaseId}`
      if (row !== undefined && (row.status === "completed" || (row.status === "failed" && row.refunded !== null))) return row
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`purchase ${purchaseId} did not end`)
  })

layer(WorkerTest, { timeout: 90_000, excludeTestServices: true })("the purchase worker", (it) => {
  it.effect("follows a completed and a failed purchase to their ends: delivered leaves on_hold, failed is refunded once", () =>
    Effect.gen(function*() {
      const engine = yield* BuyEngine
      const sql = yield* PgClient.PgClient
      const merchantId = crypto.randomUUID()
      yield* sql`INSERT INTO merchants (id, name, webhook_secret) VALUES (${merchantId}, ${`worker-${merchantId}`}, 's')`
      yield* sql`INSERT INTO balances (merchant_id, available_cents, total_deposited_cents) VALUES (${merchantId}, 10000, 10000)`
      yield* sql`INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
                 VALUES (${merchantId}, 'deposit_credit', 10000, 10000, ${crypto.randomUUID()})`
      const delivered = yield* liveItem(10)
      const refused = yield* liveItem(20)
      endings.set(delivered, "completed")
      endings.set(refused, "failed")
      const a = yield* engine.buy({ merchantId, itemId: delivered, maxPrice: 10, customId: "a", recipient: RECIPIENT })
      const b = yield* engine.buy({ merchantId, itemId: refused, maxPrice: 20, customId: "b", recipient: RECIPIENT })

      expect(yield* finalStatus(a.purchase.id)).toEqual({ status: "completed", refunded: null })
      expect(yield* finalStatus(b.purchase.id)).toEqual({ status: "failed", refunded: "2000" })

      const [balance] = yield* sql<{ available: string; onHold: string; spent: string; ledger: string; refunds: string }>`
        SELECT b.available_cents AS available, b.on_hold_cents AS "onHold", b.total_spent_cents AS spent,
          (SELECT sum(amount_cents) FROM ledger_entries WHERE merchant_id = b.merchant_id) AS ledger,
          (SELECT count(*) FROM ledger_entries WHERE merchant_id = b.merchant_id AND kind = 'purchase_refund') AS refunds
        FROM balances b WHERE b.merchant_id = ${merchantId}`
      expect(balance).toEqual({ available: "9000", onHold: "0", spent: "1000", ledger: "9000", refunds: "1" })
      const events = yield* sql<{ orderId: string; type: string }>`
        SELECT order_id AS "orderId", event_type AS type FROM webhook_events WHERE merchant_id = ${merchantId} ORDER BY seq`
      const of = (id: string) => events.filter((e) => e.orderId === id).map((e) => e.type)
      expect(of(a.purchase.id)[0]).toBe("purchase.created")
      expect(of(a.purchase.id).at(-1)).toBe("purchase.completed")
      expect(of(b.purchase.id)[0]).toBe("purchase.created")
      expect(of(b.purchase.id)).toContain("purchase.failed")
      // the refund has its own event, once
      expect(of(b.purchase.id).filter((type) => type === "purchase.refunded")).toEqual(["purchase.refunded"])
      expect(of(a.purchase.id)).not.toContain("purchase.refunded")
    }))
})
