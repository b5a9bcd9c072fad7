/**
 * Webhook delivery's bookkeeping (its SQL in DeliveriesRepo.ts): claiming due events with a lease
 * and deciding when to claim next, recording attempts, letting go at shutdown, and the support
 * procedures (replay, recovery).
 */
import { Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { type AttemptResult, CLAIM_WINDOW_MAX, type ClaimedRow, WebhookDeliveriesRepo } from "./DeliveriesRepo.js"

export type ClaimedEvent = ClaimedRow & { readonly claimToken: string }

/** When to claim next (see `claim`). */
export type ClaimNext = "now" | "soon" | "deep" | "idle" | Date

export interface ClaimLimits {
  /** This process: the lease owner. */
  readonly owner: string
  /** Events this process may still take. */
  readonly free: number
  /** Events this process may hold per merchant, not yet attempted or in flight. */
  readonly perMerchant: number
  /**
   * What this process holds now per merchant, not yet attempted or in flight (kept in memory: an
   * event whose attempt has ended no longer counts, though its result may not be recorded yet).
   */
  readonly held: ReadonlyMap<string, number>
  readonly leaseSeconds: number
}

export class WebhookDeliveries extends Effect.Service<WebhookDeliveries>()("WebhookDeliveries", {
  effect: Effect.gen(function*() {
    const repo = yield* WebhookDeliveriesRepo

    /**
     * Leases due events for this process (`owner`), oldest due first: at most `perMerchant` held
     * per merchant, counting those it holds already (`held`), and none of a merchant whose events another
     * process holds (a merchant's events are sent by one process at a time, so the per-merchant
     * limit on attempts, kept by that process, holds across all of them). With the events, what an
     * attempt needs (URL, secrets), and when to claim next:
     * - "now": due events were left out only for want of `free`;
     * - "soon": the window of candidates was full (others may wait beyond it);
     * - "deep": the scan of the due events ran out on events of merchants it may not take (a
     *   merchant at its limit with a backlog): others may wait behind them, which only a claim
     *   `byMerchant` finds (it looks at each merchant with events in turn: dearer, so seldom);
     * - else when the next event falls due ("idle": none is).
     */
    const claim = (limits: ClaimLimits, byMerchant = false) =>
      Effect.gen(function*() {
        const token = randomUUID()
        const window = Math.min(Math.max(limits.free * 2, 64), CLAIM_WINDOW_MAX)
        const { claimed, outlook } = yield* repo.claim({
          held: limits.held,
          owner: limits.owner,
          perMerchant: limits.perMerchant,
          scan: window * 2,
          window,
          free: limits.free,
          leaseSeconds: limits.leaseSeconds,
          token,
          byMerchant
        })
        const next: ClaimNext = outlook.leftOut ?
          "now"
          : outlook.windowFull ?
          "soon"
          : outlook.deep ?
          "deep"
          : outlook.nextDue ?? "idle"
        return { events: claimed.map((row): ClaimedEvent => ({ ...row, claimToken: token })), next }
      }).pipe(Effect.orDie, Effect.withSpan("WebhookDeliveries.claim"))

    /**
     * Records attempts; a result whose claim is no longer held (its lease ended, it was reclaimed)
     * changes nothing. It runs a few hundred times a second under a backlog.
     */
    const record = (results: ReadonlyArray<AttemptResult>) => repo.record(results).pipe(Effect.withSpan("WebhookDeliveries.record"))

    /** Gives claimed events back (shutdown): due again at once, for any process. */
    const release = (claims: ReadonlyArray<{ readonly id: string; readonly claimToken: string }>) => claims.length === 0 ? Effect.void : repo.release(claims)

    /**
     * Support replay (spec 4.5): the event, same event_id and body, is due again now with a new run
     * of the retry schedule. "missing" for an unknown event; "sending" while an attempt holds it.
     */
    const replay = (id: string) =>
      Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(id)) return "missing" as const
        if (yield* repo.requeue(id)) return "queued" as const
        const found = yield* repo.findEvent(id)
        return Option.isSome(found) ? "sending" as const : "missing" as const
      }).pipe(Effect.orDie, Effect.withSpan("WebhookDeliveries.replay"))

    /** Bulk recovery (CONTRACT 4): the merchant's failed events created at or after `since`, due again now. */
    const recover = (merchantId: string, since: Date) =>
      repo.requeueFailed({ merchantId, since }).pipe(
        Effect.map((row) => row.n),
        Effect.orDie,
        Effect.withSpan("WebhookDeliveries.recover")
      )

    /** Events due now (any merchant) and the age of the oldest, for /metrics. */
    const backlog = repo.backlog.pipe(
      Effect.map((rows) => ({ due: rows[0]?.due ?? 0, oldestSeconds: rows[0]?.oldest ?? 0 })),
      Effect.orDie
    )

    /** Each time events fall due somewhere (new, released, replayed, recovered): wakes the claimer. */
    const dueNotifications = repo.dueNotifications

    return { claim, record, release, replay, recover, backlog, dueNotifications } as const
  }),
  dependencies: [WebhookDeliveriesRepo.Default]
}) {}
