/**
 * The webhook sender (CONTRACT 4): supervised fibers on every process that claim due events through
 * PostgreSQL with a lease, attempt them, and record each attempt. New events wake it through a
 * notification sent at their commit (a slow poll is only the safety net). A merchant's events are
 * held by one process at a time, a few ahead of its attempts, so the next attempt starts when one
 * ends, without a round trip. At most WEBHOOK_CONCURRENCY attempts run in this process and at most
 * WEBHOOK_MERCHANT_CONCURRENCY per merchant (in all processes: only one sends a merchant's), so a
 * receiver that hangs holds up only its own merchant's events. A process that dies loses nothing:
 * its leases end and the events are claimed again; at shutdown it gives back what it holds at once.
 */
import { Context, Duration, Effect, Layer, Queue, Schedule, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { Settings } from "../Config.js"
import { logFault } from "../Db/ConnectionLoss.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { type HeldEvent, makeAttemptQueue } from "./AttemptQueue.js"
import { WebhookDeliveries } from "./Deliveries.js"
import type { AttemptResult } from "./DeliveriesRepo.js"
import { CLOSE_GRACE_MS, makeDelivery, type Outcome } from "./Delivery.js"
import { makePacer } from "./Pacing.js"
import { holding, LEASE_MARGIN_MS, nextAttemptAt } from "./Schedule.js"
import { type Resolve, systemResolve } from "./Targets.js"

/** How names of webhook hosts are resolved: the system's resolver, replaced in tests. */
export class WebhookResolver extends Context.Reference<WebhookResolver>()("WebhookResolver", {
  defaultValue: (): Resolve => systemResolve
}) {}

/** The safety net: the longest the claimer idles without a notification. */
const POLL_MS = 2_000
/** How soon to claim again when due events may wait beyond the claim's window of candidates. */
const SOON_MS = 25
/** The least time between two claims (notifications of a busy service come far more often). */
const CLAIM_SPACING_MS = 3
/** The least time between two claims that look at merchants one by one (see Deliveries.claim). */
const BY_MERCHANT_SPACING_MS = 100
const RESULT_BATCH = 256
/** How long the results of attempts ending together are gathered into one statement. */
const RESULT_GATHER = "10 millis"
/** At shutdown, how long attempts in flight may take to end before they are aborted and their events given back. */
const FINISH_WAIT = "2 seconds"
export const WebhookSenderLive = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* Settings
  const deliveries = yield* WebhookDeliveries
  const fibers = yield* Fibers
  const metrics = yield* Metrics
  const resolve = yield* WebhookResolver
  const schedule = settings.webhookRetrySchedule
  const perMerchant = settings.webhookMerchantConcurrency
  const { factor: holdFactor, leaseSeconds: lease } = holding(settings.webhookTimeoutSeconds)
  const holdPerMerchant = holdFactor * perMerchant
  const owner = randomUUID()

  const delivery = makeDelivery({
    timeoutMs: settings.webhookTimeoutSeconds * 1000,
    allowPrivateTargets: settings.webhookAllowPrivateTargets,
    resolve
  })
  yield* Effect.addFinalizer(() => delivery.close)

  const attempts = metrics.counter({
    name: "webhook_attempts_total",
    help: "Webhook delivery attempts by outcome (2xx, 3xx, 4xx, 5xx, timeout, transport, pre-flight)",
    labelNames: ["outcome"]
  })
  const latency = metrics.histogram({
    name: "webhook_delivery_latency_seconds",
    help: "From an event's creation to its receiver's 2xx",
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 36000, 100000]
  })
  const inFlightGauge = metrics.gauge({
    name: "webhook_merchant_in_flight",
    help: "Webhook attempts this process has in flight, by merchant",
    labelNames: ["merchant_id"]
  })
  const dueGauge = metrics.gauge({ name: "webhook_due_backlog", help: "Webhook events due now and not yet attempted (all processes)" })
  const oldestGauge = metrics.gauge({
    name: "webhook_oldest_due_age_seconds",
    help: "Age of the oldest webhook event that is due now (0 when none is)"
  })

  const wake = yield* Queue.sliding<void>(1)
  const signal = Queue.offer(wake, undefined)
  /**
   * A claim is due at the claimer's next turn: at start, on a notification (new or requeued events
   * somewhere), at the time the last claim gave, after the poll.
   */
  let claimDue = true
  const notified = Effect.zipRight(
    Effect.sync(() => {
      claimDue = true
    }),
    signal
  )
  const results = yield* Queue.unbounded<AttemptResult>()
  const pacer = makePacer(metrics.apiRequestsAnswered)
  // the attempts in flight, to abort at shutdown (after which their ends are not results)
  const aborts = new Map<string, () => void>()
  /** Shutdown began: no attempt starts any more; those in flight may still end with a result. */
  let finishing = false
  /** Shutdown's last step: what ends now is given back, not recorded. */
  let stopping = false
  /**
   * A claim is due when a merchant whose attempt just ended has less than a quarter of its hold
   * waiting: its next events arrive while it still has some to send (a claim needs no result
   * recorded first), and each claim takes most of a hold (a claim's fixed cost, in this process
   * and in PostgreSQL, is most of what a small one costs).
   */
  const claimIfShort = (merchantId: string) => {
    // (a claim already due may be waiting for room: an ended attempt makes some)
    if (!claimDue && held.waitingOf(merchantId) >= holdPerMerchant / 4) return
    claimDue = true
    Queue.unsafeOffer(wake, undefined)
  }

  /**
   * Last at shutdown, once the fibers below are stopped: aborts what is still in flight, records
   * what is left of the results, then gives back what is still held (and what was given up for a
   * lease running out), due at once for another process.
   */
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      stopping = true
      for (const abort of aborts.values()) abort()
      const left = Array.from(yield* Queue.takeAll(results))
      if (left.length > 0) yield* deliveries.record(left)
      for (const result of left) held.forget(result.id)
      yield* deliveries.release([...held.heldEvents(), ...held.takeGivenBack()])
    }).pipe(Effect.timeout("3 seconds"), Effect.ignoreLogged)
  )

  /** An attempt's end: counted, its result queued for recording, its slot given to the next. */
  const finish = (event: HeldEvent, outcome: Outcome) => {
    aborts.delete(event.id)
    if (stopping) return
    const at = new Date()
    attempts.inc({ outcome: outcome.kind })
    const delivered = outcome.kind === "2xx"
    if (delivered) latency.observe(Math.max(0, at.getTime() - event.createdAt.getTime()) / 1000)
    Queue.unsafeOffer(results, {
      id: event.id,
      claimToken: event.claimToken,
      status: outcome.status,
      delivered,
      at,
      nextAttemptAt: delivered ? null : nextAttemptAt(schedule, event.runAttempts + 1, at)
    })
    held.ended(event.merchantId)
    claimIfShort(event.merchantId)
  }

  /** An attempt of a held event; a pre-flight refusal ends it before `send` returns (and leaves nothing to abort). */
  const start = (event: HeldEvent) => {
    let over = false
    const abort = delivery.send({
      url: event.webhookUrl,
      eventId: event.id,
      eventType: event.eventType,
      body: event.body,
      secret: event.secret,
      previousSecret: event.previousSecret
    }, (outcome) => {
      over = true
      finish(event, outcome)
    })
    if (!over) aborts.set(event.id, abort)
  }

  /**
   * At most WEBHOOK_MERCHANT_CONCURRENCY attempts per merchant and WEBHOOK_CONCURRENCY in all,
   * merchants taken in turn, and while the merchant API keeps the process saturated, only as many
   * as Pacing.ts allows; an event whose lease is about to end is given back unattempted.
   */
  const held = makeAttemptQueue({
    perMerchant,
    total: settings.webhookConcurrency,
    // (an attempt that times out may end up to CLOSE_GRACE_MS after its deadline: see Delivery.ts)
    leaseNeededMs: settings.webhookTimeoutSeconds * 1000 + CLOSE_GRACE_MS + LEASE_MARGIN_MS,
    mayStart: () => !finishing && pacer.take(),
    start
  })

  yield* metrics.onScrape(Effect.gen(function*() {
    inFlightGauge.reset()
    for (const [merchantId, n] of held.inFlightByMerchant()) inFlightGauge.set({ merchant_id: merchantId }, n)
    const backlog = yield* deliveries.backlog
    dueGauge.set(backlog.due)
    oldestGauge.set(backlog.oldestSeconds)
  }))

  // Results are written in batches: one statement for all that ended within a few ms. A batch that
  // cannot be written is dropped: its events stay claimed until their leases end, then are sent again.
  yield* fibers.supervise("webhook-results", (beat) =>
    Effect.forever(Effect.gen(function*() {
      const first = yield* Queue.takeBetween(results, 1, RESULT_BATCH)
      // a few more milliseconds gather the results of the attempts ending meanwhile into the same statement
      if (first.length < RESULT_BATCH) yield* Effect.sleep(RESULT_GATHER)
      const batch = [...first, ...(yield* Queue.takeUpTo(results, RESULT_BATCH - first.length))]
      yield* deliveries.record(batch).pipe(
        Effect.retry(Schedule.exponential("50 millis").pipe(Schedule.intersect(Schedule.recurs(4)))),
        Effect.catchAll((error) => logFault("webhook results not recorded; their leases will end", error)),
        Effect.ensuring(Effect.sync(() => batch.forEach((result) => held.forget(result.id))))
      )
      yield* beat
    })))

  yield* fibers.supervise("webhook-pacing", (beat) => pacer.run(Effect.zipRight(beat, Effect.sync(held.dispatch))))

  yield* fibers.supervise("webhook-notifications", (beat) => deliveries.dueNotifications.pipe(Stream.runForEach(() => Effect.zipRight(beat, notified))))

  const holdCapacity = holdFactor * settings.webhookConcurrency
  yield* fibers.supervise("webhook-sender", (beat) =>
    Effect.gen(function*() {
      let lastClaimAt = 0
      // a claim that looks at merchants one by one, and when it may run next (null: none is wanted)
      let byMerchantAt: number | null = null
      while (true) {
        yield* beat
        const givenBack = held.takeGivenBack()
        if (givenBack.length > 0) yield* deliveries.release(givenBack).pipe(Effect.ignoreLogged)
        const holds = held.unfinished()
        const free = holdCapacity - holds.total
        const byMerchant = byMerchantAt !== null && byMerchantAt <= Date.now()
        if (free <= 0 || !(claimDue || byMerchant)) {
          const timeout = byMerchantAt === null ? POLL_MS : Math.max(1, Math.min(POLL_MS, byMerchantAt - Date.now()))
          const woken = yield* Queue.take(wake).pipe(Effect.timeoutOption(Duration.millis(timeout)))
          if (woken._tag === "None" && byMerchantAt === null) claimDue = true
          continue
        }
        // claims come at most every CLAIM_SPACING_MS, however many notifications arrive
        const sinceLast = Date.now() - lastClaimAt
        if (sinceLast < CLAIM_SPACING_MS) yield* Effect.sleep(Duration.millis(CLAIM_SPACING_MS - sinceLast))
        claimDue = false
        if (byMerchant) byMerchantAt = null
        const claimedAt = lastClaimAt = Date.now()
        // what is claimed is held before shutdown may stop this fiber: else it would wait for its lease
        const { next } = yield* Effect.uninterruptible(Effect.tap(
          deliveries.claim({ owner, free, perMerchant: holdPerMerchant, held: holds.perMerchant, leaseSeconds: lease }, byMerchant),
          ({ events }) => Effect.sync(() => held.add(events, claimedAt + lease * 1000))
        ))
        if (next === "now") {
          claimDue = true
          continue
        }
        if (next === "deep") {
          byMerchantAt ??= claimedAt + BY_MERCHANT_SPACING_MS
          continue
        }
        const waitMs = next === "idle" ?
          POLL_MS
          : next === "soon" ?
          SOON_MS
          : Math.min(POLL_MS, Math.max(SOON_MS, next.getTime() - Date.now()))
        const woken = yield* Queue.take(wake).pipe(Effect.timeoutOption(Duration.millis(waitMs)))
        if (woken._tag === "None") claimDue = true
      }
    }))

  // Added last, so first at shutdown, while the fibers above still run: no attempt starts any more,
  // and those in flight get FINISH_WAIT to end with their results recorded; the finalizer above then
  // aborts the rest and gives back everything unsent.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      finishing = true
      // (an event whose attempt ended is held until its result is recorded)
      const settled = () => held.inFlightTotal() === 0 && held.heldEvents().length === held.unfinished().total
      yield* Effect.sleep("10 millis").pipe(Effect.repeat({ until: settled }), Effect.timeout(FINISH_WAIT), Effect.ignore)
    })
  )
}))
