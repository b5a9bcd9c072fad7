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
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Queue, Schedule, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { Settings } from "../Config.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { type AttemptResult, type ClaimedEvent, DUE_CHANNEL, WebhookDeliveries } from "./Deliveries.js"
import { makeDelivery, type Outcome } from "./Delivery.js"
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
export const WebhookSenderLive = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* Settings
  const deliveries = yield* WebhookDeliveries
  const fibers = yield* Fibers
  const metrics = yield* Metrics
  const pg = yield* PgClient.PgClient
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

  // What this process holds: every claimed event until its result is recorded (or it is given
  // back); of those, the ones waiting for an attempt (per merchant, in claim order) and the
  // attempts in flight (per merchant and in all).
  const held = new Map<string, ClaimedEvent & { readonly leaseEndsAt: number }>()
  const waiting = new Map<string, Array<ClaimedEvent & { readonly leaseEndsAt: number }>>()
  const inFlight = new Map<string, number>()
  let inFlightTotal = 0

  yield* metrics.onScrape(Effect.gen(function*() {
    inFlightGauge.reset()
    for (const [merchantId, n] of inFlight) inFlightGauge.set({ merchant_id: merchantId }, n)
    const backlog = yield* deliveries.backlog
    dueGauge.set(backlog.due)
    oldestGauge.set(backlog.oldestSeconds)
  }))

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
  let stopping = false
  // held events dropped unattempted (their leases were running out), given back by the claimer
  const toRelease: Array<ClaimedEvent> = []

  /**
   * What this process holds per merchant and in all that is not yet attempted or in flight: what
   * the holding limits count (an event whose attempt ended is done with, recorded or not).
   */
  const unfinished = () => {
    const perMerchant = new Map(inFlight)
    let total = inFlightTotal
    for (const [merchantId, queue] of waiting) {
      perMerchant.set(merchantId, (perMerchant.get(merchantId) ?? 0) + queue.length)
      total += queue.length
    }
    return { perMerchant, total }
  }

  /**
   * A claim is due when a merchant whose attempt just ended has less than a quarter of its hold
   * waiting: its next events arrive while it still has some to send (a claim needs no result
   * recorded first), and each claim takes most of a hold (a claim's fixed cost, in this process
   * and in PostgreSQL, is most of what a small one costs).
   */
  const claimIfShort = (merchantId: string) => {
    // (a claim already due may be waiting for room: an ended attempt makes some)
    if (!claimDue && (waiting.get(merchantId)?.length ?? 0) >= holdPerMerchant / 4) return
    claimDue = true
    Queue.unsafeOffer(wake, undefined)
  }

  /** Aborts what is in flight, records what is left of the results, then gives back what is still held: last at shutdown. */
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      stopping = true
      for (const abort of aborts.values()) abort()
      const left = Array.from(yield* Queue.takeAll(results))
      if (left.length > 0) yield* deliveries.record(left)
      for (const result of left) held.delete(result.id)
      yield* deliveries.release(Array.from(held.values()))
    }).pipe(Effect.timeout("3 seconds"), Effect.ignoreLogged)
  )

  /** An attempt's end: counted, its result queued for recording, its slot given to the next. */
  const finish = (event: ClaimedEvent, outcome: Outcome) => {
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
    const left = (inFlight.get(event.merchantId) ?? 1) - 1
    if (left > 0) inFlight.set(event.merchantId, left)
    else inFlight.delete(event.merchantId)
    inFlightTotal -= 1
    dispatch()
    claimIfShort(event.merchantId)
  }

  /**
   * Starts attempts of waiting events while the limits allow: at most WEBHOOK_MERCHANT_CONCURRENCY
   * per merchant and WEBHOOK_CONCURRENCY in all, merchants taken in turn, and while the merchant
   * API keeps the process saturated, only as many as Pacing.ts allows. An event whose lease is
   * about to end is given back unattempted (its result could no longer be recorded). Attempts are
   * node callbacks, not fibers: thousands start a second.
   */
  const dispatch = () => {
    const now = Date.now()
    // (keys first: a merchant served is moved to the end of the map)
    for (const merchantId of Array.from(waiting.keys())) {
      if (inFlightTotal >= settings.webhookConcurrency) break
      const queue = waiting.get(merchantId)!
      let n = inFlight.get(merchantId) ?? 0
      while (queue.length > 0 && n < perMerchant && inFlightTotal < settings.webhookConcurrency && pacer.take()) {
        const event = queue.shift()!
        if (event.leaseEndsAt - now < settings.webhookTimeoutSeconds * 1000 + LEASE_MARGIN_MS) {
          held.delete(event.id)
          toRelease.push(event)
          continue
        }
        n += 1
        inFlightTotal += 1
        inFlight.set(merchantId, n)
        aborts.set(
          event.id,
          delivery.send({
            url: event.webhookUrl,
            eventId: event.id,
            eventType: event.eventType,
            body: event.body,
            secret: event.secret,
            previousSecret: event.previousSecret
          }, (outcome) => finish(event, outcome))
        )
      }
      // the next dispatch starts with the merchants served least recently
      waiting.delete(merchantId)
      if (queue.length > 0) waiting.set(merchantId, queue)
    }
  }

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
        Effect.catchAll((error) => Effect.logError("webhook results not recorded; their leases will end", error)),
        Effect.ensuring(Effect.sync(() => batch.forEach((result) => held.delete(result.id))))
      )
      yield* beat
    })))

  yield* fibers.supervise("webhook-pacing", (beat) => pacer.run(Effect.zipRight(beat, Effect.sync(dispatch))))

  yield* fibers.supervise("webhook-notifications", (beat) => pg.listen(DUE_CHANNEL).pipe(Stream.runForEach(() => Effect.zipRight(beat, notified))))

  const holdCapacity = holdFactor * settings.webhookConcurrency
  yield* fibers.supervise("webhook-sender", (beat) =>
    Effect.gen(function*() {
      let lastClaimAt = 0
      // a claim that looks at merchants one by one, and when it may run next (null: none is wanted)
      let byMerchantAt: number | null = null
      while (true) {
        yield* beat
        if (toRelease.length > 0) yield* deliveries.release(toRelease.splice(0)).pipe(Effect.ignoreLogged)
        const holds = unfinished()
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
        const { events, next } = yield* deliveries.claim(
          { owner, free, perMerchant: holdPerMerchant, held: holds.perMerchant, leaseSeconds: lease },
          byMerchant
        )
        for (const event of events) {
          const entry = { ...event, leaseEndsAt: claimedAt + lease * 1000 }
          held.set(event.id, entry)
          const queue = waiting.get(event.merchantId)
          if (queue === undefined) waiting.set(event.merchantId, [entry])
          else queue.push(entry)
        }
        if (events.length > 0) dispatch()
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
}))
