/**
 * The webhook sender (CONTRACT 4): supervised fibers on every process that claim due events through
 * PostgreSQL with a lease, attempt them, and record each attempt. New events wake it through a
 * notification sent at their commit (a slow poll is only the safety net). At most
 * WEBHOOK_CONCURRENCY attempts run in this process, and at most WEBHOOK_MERCHANT_CONCURRENCY per
 * merchant across all processes (the claim counts the live leases), so a receiver that hangs holds
 * up only its own merchant's events. A process that dies loses nothing: its leases end and the
 * events are claimed again; at shutdown it gives back what it holds at once.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, FiberSet, Layer, Option, Queue, Schedule, Stream } from "effect"
import { Settings } from "../Config.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { type AttemptResult, type ClaimedEvent, DUE_CHANNEL, WebhookDeliveries } from "./Deliveries.js"
import { makeDelivery, type Outcome } from "./Delivery.js"
import { type Resolve, systemResolve } from "./Targets.js"

/** How names of webhook hosts are resolved: the system's resolver, replaced in tests. */
export class WebhookResolver extends Context.Reference<WebhookResolver>()("WebhookResolver", {
  defaultValue: (): Resolve => systemResolve
}) {}

/** The safety net: the longest the claimer idles without a notification. */
const POLL_MS = 2_000
/** A claim that took nothing while something is due (rows held by another transaction): look again soon, not at once. */
const RETRY_SOON_MS = 25
const RESULT_BATCH = 256
const MAX_LEASE_SECONDS = 120

/** Long enough for an attempt (its timeout) and the recording of its result; at most 120 s (spec 3.3). */
export const leaseSeconds = (timeoutSeconds: number) => Math.min(MAX_LEASE_SECONDS, Math.ceil(2 * timeoutSeconds + 5))

/** When the attempt after `attemptsInRun` attempts is due, or null when the schedule is exhausted. */
export const nextAttemptAt = (schedule: ReadonlyArray<number>, attemptsInRun: number, after: Date): Date | null => {
  const delay = schedule[attemptsInRun]
  return delay === undefined ? null : new Date(after.getTime() + delay * 1000)
}

export const WebhookSenderLive = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* Settings
  const deliveries = yield* WebhookDeliveries
  const fibers = yield* Fibers
  const metrics = yield* Metrics
  const pg = yield* PgClient.PgClient
  const resolve = yield* WebhookResolver
  const schedule = settings.webhookRetrySchedule
  const perMerchant = settings.webhookMerchantConcurrency
  const lease = leaseSeconds(settings.webhookTimeoutSeconds)

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

  // What this process holds: every claimed event until its result is recorded (or it is given back).
  const held = new Map<string, ClaimedEvent>()
  const perMerchantInFlight = new Map<string, number>()
  const hold = (event: ClaimedEvent) => {
    held.set(event.id, event)
    perMerchantInFlight.set(event.merchantId, (perMerchantInFlight.get(event.merchantId) ?? 0) + 1)
  }
  const letGo = (event: ClaimedEvent) => {
    if (!held.delete(event.id)) return
    const left = (perMerchantInFlight.get(event.merchantId) ?? 1) - 1
    if (left > 0) perMerchantInFlight.set(event.merchantId, left)
    else perMerchantInFlight.delete(event.merchantId)
  }

  yield* metrics.onScrape(Effect.gen(function*() {
    inFlightGauge.reset()
    for (const [merchantId, n] of perMerchantInFlight) inFlightGauge.set({ merchant_id: merchantId }, n)
    const backlog = yield* deliveries.backlog
    dueGauge.set(backlog.due)
    oldestGauge.set(backlog.oldestSeconds)
  }))

  const wake = yield* Queue.sliding<void>(1)
  const signal = Queue.offer(wake, undefined)
  const results = yield* Queue.unbounded<{ readonly event: ClaimedEvent; readonly result: AttemptResult }>()

  /** Records what is left of the results, then gives back what is still held: last at shutdown. */
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const left = yield* Queue.takeAll(results)
      const done = Array.from(left)
      if (done.length > 0) yield* deliveries.record(done.map((d) => d.result))
      for (const d of done) letGo(d.event)
      yield* deliveries.release(Array.from(held.values()))
    }).pipe(Effect.timeout("3 seconds"), Effect.ignoreLogged)
  )

  const attempt = (event: ClaimedEvent) =>
    Effect.gen(function*() {
      const outcome: Outcome = yield* delivery.attempt({
        url: event.webhookUrl,
        eventId: event.id,
        eventType: event.eventType,
        body: event.body,
        secret: event.secret,
        previousSecret: event.previousSecret
      })
      const at = new Date()
      attempts.inc({ outcome: outcome.kind })
      const delivered = outcome.kind === "2xx"
      if (delivered) latency.observe(Math.max(0, at.getTime() - event.createdAt.getTime()) / 1000)
      else {
        yield* Effect.logDebug("webhook attempt failed").pipe(
          Effect.annotateLogs({ event_id: event.id, merchant_id: event.merchantId, outcome: outcome.kind, detail: outcome.detail })
        )
      }
      const result: AttemptResult = {
        id: event.id,
        claimToken: event.claimToken,
        status: outcome.status,
        delivered,
        at,
        nextAttemptAt: delivered ? null : nextAttemptAt(schedule, event.runAttempts + 1, at)
      }
      yield* Queue.offer(results, { event, result })
    })

  const running = yield* FiberSet.make<void, never>()

  // Results are written in batches: one statement for all that ended meanwhile. A batch that cannot
  // be written is dropped: its events stay claimed until their leases end, then are sent again.
  yield* fibers.supervise("webhook-results", (beat) =>
    Effect.forever(Effect.gen(function*() {
      const batch = Array.from(yield* Queue.takeBetween(results, 1, RESULT_BATCH))
      yield* deliveries.record(batch.map((d) => d.result)).pipe(
        Effect.retry(Schedule.exponential("50 millis").pipe(Schedule.intersect(Schedule.recurs(4)))),
        Effect.catchAll((error) => Effect.logError("webhook results not recorded; their leases will end", error)),
        Effect.ensuring(Effect.sync(() => batch.forEach((d) => letGo(d.event))))
      )
      yield* signal
      yield* beat
    })))

  yield* fibers.supervise("webhook-notifications", (beat) =>
    pg.listen(DUE_CHANNEL).pipe(Stream.runForEach(() => Effect.zipRight(signal, beat))))

  yield* fibers.supervise("webhook-sender", (beat) =>
    Effect.gen(function*() {
      while (true) {
        yield* beat
        const free = settings.webhookConcurrency - held.size
        if (free <= 0) {
          yield* Queue.take(wake)
          continue
        }
        const claimed = yield* deliveries.claim({ free, perMerchant, leaseSeconds: lease })
        for (const event of claimed) {
          hold(event)
          yield* FiberSet.run(running, attempt(event))
        }
        if (claimed.length > 0) continue
        const next = yield* deliveries.nextDue(perMerchant)
        const waitMs = Option.match(next, {
          onNone: () => POLL_MS,
          onSome: (at) => Math.min(POLL_MS, Math.max(RETRY_SOON_MS, at.getTime() - Date.now()))
        })
        yield* Queue.take(wake).pipe(Effect.timeoutOption(Duration.millis(waitMs)))
      }
    }))
}))
