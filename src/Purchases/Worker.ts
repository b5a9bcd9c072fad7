/**
 * The purchase worker: supervised fibers on every process that claim due purchases through
 * PostgreSQL (FOR UPDATE SKIP LOCKED with a lease), so any number of processes share the work and
 * a purchase held by a dead process is resumed when its lease runs out. The provider request id is
 * recorded before the provider is called, so a resumed purchase asks for the same order, never a
 * second one. Every state change, its money movement and its events are one transaction.
 *
 * A purchase this process created comes leased and is handed over (Handover.ts): it is stepped
 * without a claim. The first steps of new purchases are taken together: what is handed over within
 * HANDOVER_GATHER is placed with the provider in one call and moved to processing in one statement.
 * A step's end tells the claimer when that purchase is next due, so its own notification does not
 * wake the claimer to query what it already knows. The statements are in WorkerRepo.ts.
 */
import { Effect, FiberSet, Layer, Option, Queue, Schema } from "effect"
import { logFault } from "../Db/ConnectionLoss.js"
import { SimHints } from "../Domain/CatalogItem.js"
import type { EventType } from "../Domain/EventType.js"
import { PurchaseStatus } from "../Domain/Purchase.js"
import { parseTradeUrl } from "../Domain/TradeUrl.js"
import { Ledger } from "../Ledger/Ledger.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { onlyTaken, type OrderStatus, PurchaseProvider } from "../Providers/PurchaseProvider.js"
import { Outbox } from "../Webhooks/Outbox.js"
import { PurchaseHandover } from "./Handover.js"
import { PurchaseNotifications } from "./Notifications.js"
import { purchaseEventData, type PurchaseRow } from "./Rows.js"
import { CLAIM_BATCH, WorkerRepo } from "./WorkerRepo.js"

/** A purchase's test-mode hints, as written from the item's (checked on write). */
const decodeSimHints = Schema.decodeUnknownSync(Schema.parseJson(SimHints))

/** Batches of steps running at once (a claim's batch, a handover's batch). */
const STEP_CONCURRENCY = 8
/** After a purchase is handed over, how long to let more buys commit before their first steps are taken together. */
const HANDOVER_GATHER = "50 millis"
const HANDOVER_BATCH = 64
/**
 * The longest the claimer idles: what falls due announces itself (this process's steps, other
 * processes' notifications, the next due time or lease end the claim saw); this only bounds a
 * missed notification. Each wake-up is a claim query.
 */
const IDLE_WAIT_MS = 5_000
/** A completed purchase is watched this long after the provider's last announced change. */
const REVERSAL_WATCH_SLACK_MS = 60_000

export const PurchaseWorkerLive = Layer.scopedDiscard(Effect.gen(function*() {
  const provider = yield* PurchaseProvider
  const ledger = yield* Ledger
  const outbox = yield* Outbox
  const notifications = yield* PurchaseNotifications
  const fibers = yield* Fibers
  const metrics = yield* Metrics
  const handover = yield* PurchaseHandover
  const repo = yield* WorkerRepo

  // Added first, so run last: once this process's steps are stopped (shutdown), what it still
  // holds is let go and announced, for another process to claim at once instead of when the
  // leases run out. Anything a stopped step began was rolled back; its provider request id stays.
  yield* Effect.addFinalizer(() => repo.releaseAll.pipe(Effect.timeout("2 seconds"), Effect.ignoreLogged))

  // The claimer's schedule: when it wakes from idling (-Infinity while it claims), and the earliest
  // next look that this process's steps scheduled since its last claim began.
  let claimerWakesAt = Number.NEGATIVE_INFINITY
  let dueHere = Number.POSITIVE_INFINITY
  const rescheduled = yield* Queue.sliding<void>(1)
  /** A step of this process scheduled its purchase's next look (null: there is none, it is done). */
  const dueBy = (at: Date | null) =>
    Effect.suspend(() => {
      if (at === null) return Effect.void
      dueHere = Math.min(dueHere, at.getTime())
      return at.getTime() < claimerWakesAt ? Queue.offer(rescheduled, undefined) : Effect.void
    })

  const emit = (row: PurchaseRow, type: EventType, extra?: { readonly balanceAfterCents?: number; readonly refundedCents?: number }) =>
    outbox.enqueue({ merchantId: row.merchantId, type, orderId: row.id, data: purchaseEventData(row, extra) })

  /**
   * The request id to give the provider. It is written with the purchase; a purchase created
   * before that gets one here, recorded before any call upstream, so a resumed step asks for the
   * same order, never a second one.
   */
  const requestIdOf = (row: PurchaseRow) =>
    row.providerRequestId !== null
      ? Effect.succeed(row.providerRequestId)
      : Effect.map(repo.assignRequestId(row.id), ({ requestId }) => requestId)

  /** When to look at an order again: when the provider says it changes, or in a second while in flight. */
  const nextStepAfter = (status: OrderStatus, inFlight: boolean) => status.nextChangeAt ?? (inFlight ? new Date(Date.now() + 1_000) : null)

  /** Applies what the provider reports, in order, in one transaction; schedules the next look. */
  const apply = (id: string, status: OrderStatus) =>
    repo.withTransaction(Effect.gen(function*() {
      const owned = yield* repo.lockOwned(id)
      if (Option.isNone(owned)) return null
      let row: PurchaseRow = owned.value
      /** A state change of the purchase, read back. */
      const update = <E>(change: Effect.Effect<PurchaseRow, E>) =>
        Effect.map(change, (updated) => {
          row = updated
        })

      // created → processing once the provider has the order (spec 3.1: acquiring the item upstream)
      if (row.status === "created") {
        yield* update(repo.toProcessing(id))
        yield* emit(row, "purchase.processing")
      }

      if (status.waitingTopUp && !row.topupWaiting && !row.acknowledged) {
        yield* update(repo.waitingTopUp(id))
      }
      if (status.acknowledged && !row.acknowledged) {
        yield* update(repo.acknowledge(id))
      }
      if (status.tradeOffer !== undefined && row.tradeOfferId === null) {
        const nextStatus = row.status === "processing" ? "sent_to_steam" : row.status
        yield* update(repo.tradeOfferSent(id, status.tradeOffer, nextStatus))
        if (nextStatus === "sent_to_steam") yield* emit(row, "purchase.sent_to_steam")
      }
      const inFlight = row.status === "processing" || row.status === "sent_to_steam"
      if (inFlight && status.outcome._tag === "completed") {
        yield* update(repo.complete(id))
        yield* ledger.settlePurchase(row.merchantId, row.priceCents)
        yield* emit(row, "purchase.completed")
      } else if (inFlight && status.outcome._tag === "failed") {
        const failure = status.outcome
        yield* update(repo.fail(id, failure.code, failure.message))
        if (failure.refundable) {
          const after = yield* ledger.refundPurchase(row.merchantId, row.priceCents, row.id, true)
          yield* update(repo.refunded(id, row.priceCents))
          yield* emit(row, "purchase.failed")
          if (Option.isSome(after)) yield* emit(row, "purchase.refunded", { refundedCents: row.priceCents, balanceAfterCents: after.value })
        } else {
          // MANUAL_REVIEW: leaves on_hold (no longer in flight) without any automatic refund
          yield* ledger.settlePurchase(row.merchantId, row.priceCents)
          yield* emit(row, "purchase.failed")
        }
      }
      // A reversal may already be due when delivery is first seen (a late worker): apply both.
      if (row.status === "completed" && status.reversal !== undefined) {
        const reversal = status.reversal
        const message = reversal === "REVERTED_BY_SELLER" ?
          "The seller reversed the accepted trade; refunded in full."
          : reversal === "REVERTED_BY_BUYER" ?
          "The buyer reversed the accepted trade; no refund."
          : "The trade was reversed and needs manual review; no automatic refund."
        // the seller's reversal is refunded first, so that purchase.reverted already carries refunded_amount
        const refunded = reversal === "REVERTED_BY_SELLER" ? row.priceCents : reversal === "REVERTED_BY_BUYER" ? 0 : null
        const after = reversal === "REVERTED_BY_SELLER"
          ? yield* ledger.refundPurchase(row.merchantId, row.priceCents, row.id, false)
          : Option.none<number>()
        yield* update(repo.revert(id, reversal, message, refunded))
        yield* emit(row, "purchase.reverted")
        if (Option.isSome(after)) yield* emit(row, "purchase.refunded", { refundedCents: row.priceCents, balanceAfterCents: after.value })
      }

      const stillInFlight = row.status === "created" || row.status === "processing" || row.status === "sent_to_steam"
      const next = status.nextChangeAt
      const watchUntil = row.status === "completed" && next !== undefined ? new Date(next.getTime() + REVERSAL_WATCH_SLACK_MS) : null
      // notifying also when only the schedule changed: every claimer recomputes when to wake
      const nextStep = nextStepAfter(status, stillInFlight)
      yield* notifications.changingHere(id)
      yield* repo.release(id, nextStep, watchUntil)
      return nextStep
    })).pipe(Effect.flatMap(dueBy))

  /**
   * The usual first step, for several purchases in one statement instead of a transaction of five
   * each: created → processing with its event, the lease released and the next look scheduled, as
   * `apply` does when the provider reports nothing else yet. Returns the ids it moved; a purchase
   * that is not this worker's to move is left (`apply` then finds that out and leaves it).
   */
  const startProcessing = (taken: ReadonlyArray<{ readonly row: PurchaseRow; readonly status: OrderStatus }>) =>
    Effect.gen(function*() {
      if (taken.length === 0) return new Set<string>()
      const nextSteps = taken.map(({ status }) => nextStepAfter(status, true)!)
      for (const { row } of taken) yield* notifications.changingHere(row.id)
      const events = taken.map(({ row }) => ({
        merchantId: row.merchantId,
        type: "purchase.processing" as const,
        orderId: row.id,
        data: purchaseEventData({ ...row, status: "processing" })
      }))
      const moved = yield* repo.moveToProcessing(taken.map(({ row }, i) => ({ id: row.id, dueAt: nextSteps[i]! })), outbox.prepareAll(events))
      for (let i = 0; i < taken.length; i++) if (moved.has(taken[i]!.row.id)) yield* dueBy(nextSteps[i]!)
      return moved
    })

  /** Logs a failed step: the lease will expire and the purchases are stepped again. */
  const logFailure = (ids: ReadonlyArray<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(
      Effect.asVoid,
      Effect.catchAllCause((cause) =>
        logFault("purchase step failed; the lease will expire and it is retried", cause).pipe(
          Effect.annotateLogs("purchase_id", ids.join(","))
        )
      )
    )

  /** The order request of a created purchase. */
  const orderRequestOf = (row: PurchaseRow) =>
    Effect.map(requestIdOf(row), (requestId) => ({
      requestId,
      purchaseId: row.id,
      itemId: row.itemId,
      priceCents: row.priceCents,
      tradeToken: parseTradeUrl(row.targetTradeUrl)?.token ?? "",
      sim: row.sim === null ? undefined : decodeSimHints(row.sim)
    }))

  /**
   * The first step of created purchases this worker leased, for all of them at once: their orders
   * placed in one provider call (after that the provider has them), those it merely took moved to
   * processing in one statement, the others' statuses applied one by one.
   */
  const start = (rows: ReadonlyArray<PurchaseRow>) =>
    Effect.gen(function*() {
      const statuses = yield* provider.placeOrders(yield* Effect.forEach(rows, orderRequestOf))
      const moved = yield* startProcessing(rows.flatMap((row, i) => onlyTaken(statuses[i]!) ? [{ row, status: statuses[i]! }] : []))
      const rest = rows.flatMap((row, i) => moved.has(row.id) ? [] : [{ id: row.id, status: statuses[i]! }])
      yield* Effect.forEach(rest, ({ id, status }) => logFailure([id])(apply(id, status)), { concurrency: "unbounded", discard: true })
    }).pipe(
      logFailure(rows.map((row) => row.id)),
      Effect.withSpan("PurchaseWorker.start", { attributes: { purchases: rows.length } })
    )

  /** One later step of a purchase this worker leased (as read by the claim): its order's status applied. */
  const step = (row: PurchaseRow) =>
    Effect.flatMap(requestIdOf(row), (requestId) => Effect.flatMap(provider.orderStatus(requestId), (status) => apply(row.id, status))).pipe(
      logFailure([row.id]),
      Effect.withSpan("PurchaseWorker.step", { attributes: { purchase_id: row.id } })
    )

  /** Steps leased purchases: the created ones' first steps together, the others one by one. */
  const stepAll = (rows: ReadonlyArray<PurchaseRow>) => {
    const created = rows.filter((row) => row.status === "created")
    const later = rows.filter((row) => row.status !== "created")
    return Effect.all([
      created.length > 0 ? start(created) : Effect.void,
      Effect.forEach(later, step, { concurrency: "unbounded", discard: true })
    ], { concurrency: "unbounded", discard: true })
  }

  /**
   * Waits until the next due purchase the claim saw (`due`) or this process's steps scheduled, a
   * notification of another process's change, or at most IDLE_WAIT_MS.
   */
  const idle = (due: Date | string | null) =>
    Effect.suspend(() => {
      const dueAt = Math.min(due === null ? Number.POSITIVE_INFINITY : new Date(due).getTime(), dueHere)
      const wait = Math.max(5, Math.min(IDLE_WAIT_MS, dueAt - Date.now()))
      claimerWakesAt = Date.now() + wait
      return Effect.raceAll([notifications.awaitWork, Queue.take(rescheduled), Effect.sleep(wait)])
    }).pipe(Effect.ensuring(Effect.sync(() => {
      claimerWakesAt = Number.NEGATIVE_INFINITY
    })))

  // One claimer per process hands leased purchases to at most STEP_CONCURRENCY batches of steps at
  // once; a notification wakes one query, not one per worker. Purchases handed over by this
  // process's buys share the same turns.
  const turns = yield* Effect.makeSemaphore(STEP_CONCURRENCY)
  const running = yield* FiberSet.make<void, never>()
  const stepInTurn = (rows: ReadonlyArray<PurchaseRow>) =>
    Effect.zipRight(turns.take(1), FiberSet.run(running, Effect.ensuring(stepAll(rows), turns.release(1))))
  yield* fibers.supervise("purchase-worker", (beat) =>
    Effect.forever(Effect.gen(function*() {
      // what this claim sees due need not be remembered from earlier steps
      dueHere = Number.POSITIVE_INFINITY
      const claimed = yield* repo.claim
      yield* beat
      if (claimed.purchases.length > 0) yield* stepInTurn(claimed.purchases)
      // A full batch may have left more due work: claim again at once. A partial one (or none)
      // took all that was due; what falls due next is what the claim saw (`due`: steps announced
      // before it began are in it), or is announced by this process's steps or another's notification.
      if (claimed.purchases.length < CLAIM_BATCH) yield* idle(claimed.due)
    })))
  yield* fibers.supervise("purchase-handover", (beat) =>
    Effect.forever(Effect.gen(function*() {
      const first = yield* handover.take
      yield* Effect.sleep(HANDOVER_GATHER)
      const more = yield* handover.takeUpTo(HANDOVER_BATCH - 1)
      yield* stepInTurn([first, ...more])
      yield* beat
    })))

  const byStatus = metrics.gauge({ name: "purchases", help: "Purchases by status", labelNames: ["status"] })
  const queueDepth = metrics.gauge({ name: "purchase_worker_queue_depth", help: "In-flight purchases due for a worker step" })
  yield* metrics.onScrape(
    Effect.gen(function*() {
      const counts = yield* repo.countByStatus
      for (const s of PurchaseStatus.literals) byStatus.set({ status: s }, counts.find((c) => c.status === s)?.n ?? 0)
      queueDepth.set(yield* repo.countDue)
    }).pipe(Effect.orDie)
  )
})).pipe(
  // built in the app's layers, so that its repository's PurchaseHandover (the owner it leases as) is the buys'
  Layer.provide(WorkerRepo.Default)
)
