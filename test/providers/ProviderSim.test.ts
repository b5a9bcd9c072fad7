/**
 * The simulated provider's order book (src/Providers/Simulator/ProviderSim.ts) on a fresh test
 * database (PGlite, or PostgreSQL when DATABASE_URL is set): placing an order reports its status;
 * several orders placed in one call report each its own, in order; placing the same request id
 * again, also many times at once, is one order with one status; the
 * status read later is the one placing reported; an unknown order is a defect. Real time (no
 * TestClock): the order book dates orders by the clock.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { randomUUID } from "node:crypto"
import { type OrderRequest, PurchaseProvider, type PurchaseProviderService } from "../../src/Providers/PurchaseProvider.js"
import { ProviderSimLive } from "../../src/Providers/Simulator/ProviderSim.js"
import { inProcess } from "../support/in-process.js"

const ProviderTest = inProcess(ProviderSimLive, { SIM_TIME_SCALE: "1", BUY_SYNC_WAIT_SECONDS: "30" })

const order = (token = "abcdEFGH"): OrderRequest => ({
  requestId: randomUUID(),
  purchaseId: randomUUID(),
  itemId: null,
  priceCents: 1_234,
  tradeToken: token,
  sim: undefined
})

/** One order placed on its own. */
const placeOne = (provider: PurchaseProviderService, request: OrderRequest) =>
  Effect.map(provider.placeOrders([request]), (statuses) => {
    expect(statuses).toHaveLength(1)
    return statuses[0]!
  })

layer(ProviderTest, { timeout: 60_000, excludeTestServices: true })("the simulated provider's orders", (it) => {
  it.effect("placing reports the order's status, and placing it again is the same order", () =>
    Effect.gen(function*() {
      const provider = yield* PurchaseProvider
      const request = order()
      const placed = yield* placeOne(provider, request)
      expect(placed).toMatchObject({ waitingTopUp: false, acknowledged: false, tradeOffer: undefined, outcome: { _tag: "pending" } })
      expect(placed.nextChangeAt).toBeInstanceOf(Date)
      expect(placed.nextChangeAt!.getTime()).toBeGreaterThan(Date.now())
      yield* Effect.sleep("20 millis")
      // a second placement (later, so its own plan's times would differ) finds the first order
      const again = yield* placeOne(provider, { ...request, purchaseId: randomUUID() })
      expect(again).toEqual(placed)
      expect(yield* provider.orderStatus(request.requestId)).toEqual(placed)
    }))

  it.effect("several orders placed in one call report each its own status, in order; a repeat among them is the earlier order", () =>
    Effect.gen(function*() {
      const provider = yield* PurchaseProvider
      const sql = yield* SqlClient.SqlClient
      const earlier = order()
      const placedEarlier = yield* placeOne(provider, earlier)
      yield* Effect.sleep("20 millis")
      const batch = [order(), order("badtoken"), { ...earlier, purchaseId: randomUUID() }, order("topup000"), order()]
      const statuses = yield* provider.placeOrders(batch)
      expect(statuses).toHaveLength(batch.length)
      expect(statuses[2]).toEqual(placedEarlier)
      // the top-up wait is known at once; the others are pending acquisition
      expect(statuses.map((s) => s.waitingTopUp)).toEqual([false, false, false, true, false])
      for (let i = 0; i < batch.length; i++) expect(statuses[i], `request ${i}`).toEqual(yield* provider.orderStatus(batch[i]!.requestId))
      const stored = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM sim_provider_orders WHERE request_id IN ${sql.in(batch.map((r) => r.requestId))}`
      expect(stored[0]!.n, "one order per request id").toBe(batch.length)
      expect(yield* provider.placeOrders([])).toEqual([])
    }))

  it.effect("many placements of one request id at once make one order, and all report it", () =>
    Effect.gen(function*() {
      const provider = yield* PurchaseProvider
      const sql = yield* SqlClient.SqlClient
      const request = order()
      const statuses = yield* Effect.all(Array.from({ length: 20 }, () => placeOne(provider, request)), { concurrency: "unbounded" })
      const stored = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM sim_provider_orders WHERE request_id = ${request.requestId}`
      expect(stored[0]!.n).toBe(1)
      const read = yield* provider.orderStatus(request.requestId)
      for (const status of statuses) expect(status).toEqual(read)
    }))

  it.effect("a placement that waits for a concurrent one (not yet committed) reports the order that one made", () =>
    Effect.gen(function*() {
      const provider = yield* PurchaseProvider
      const sql = yield* SqlClient.SqlClient
      const request = order()
      // the first placement's transaction stays open while the second one is sent: on PostgreSQL
      // the second waits for it, and its statement's snapshot does not see the order (PGlite runs
      // the second after the transaction)
      const first = yield* Effect.fork(sql.withTransaction(Effect.zipLeft(placeOne(provider, request), Effect.sleep("300 millis"))))
      yield* Effect.sleep("100 millis")
      const second = yield* placeOne(provider, { ...request, purchaseId: randomUUID() })
      expect(second).toEqual(yield* Fiber.join(first))
    }))

  it.effect("an order that fails at acquisition reports its failure once decided", () =>
    Effect.gen(function*() {
      const provider = yield* PurchaseProvider
      const request = order("badtoken")
      const placed = yield* placeOne(provider, request)
      expect(placed.outcome._tag).toBe("pending")
      yield* Effect.sleep(placed.nextChangeAt!.getTime() - Date.now() + 20)
      expect((yield* provider.orderStatus(request.requestId)).outcome).toEqual({
        _tag: "failed",
        code: "INVALID_TRADE_URL",
        message: "The trade URL or its token is invalid or revoked.",
        refundable: true
      })
    }))

  it.effect("an unknown order is a defect", () =>
    Effect.gen(function*() {
      const provider = yield* PurchaseProvider
      const exit = yield* Effect.exit(provider.orderStatus(randomUUID()))
      expect(Exit.isFailure(exit) && exit.cause._tag === "Die").toBe(true)
    }))
})
