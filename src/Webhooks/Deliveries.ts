/**
 * The SQL of webhook delivery: claiming due events with a lease, recording attempts, letting go at
 * shutdown, and the support procedures (replay, recovery).
 */
import { SqlClient, SqlError, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { DirectTransactions } from "../Db/Database.js"
import { CountRow, Int8, Numeric, rowsOf } from "../Domain/Db.js"
import { CLAIM, CLAIM_BY_MERCHANT, CLAIM_PLAN, CLAIM_WINDOW_MAX, NO_SYNC_COMMIT, RECORD } from "./DeliveryStatements.js"

export const DUE_CHANNEL = "webhook_events_due"
const CLAIM_LOCK_KEY = 7_311_024

/** A timestamptz as pg (Date) or an expression's text gives it. */
const Instant = Schema.Union(Schema.DateFromSelf, Schema.DateFromString)

const ClaimOutlook = Schema.Struct({
  leftOut: Schema.Boolean,
  windowFull: Schema.Boolean,
  deep: Schema.Boolean,
  nextDue: Schema.NullOr(Instant)
})

const ClaimedRow = Schema.Struct({
  id: Schema.String,
  merchantId: Schema.String,
  eventType: Schema.String,
  body: Schema.String,
  createdAt: Instant,
  runAttempts: Schema.Number,
  webhookUrl: Schema.NullOr(Schema.String),
  secret: Schema.String,
  previousSecret: Schema.NullOr(Schema.String)
})
const decodeOutlook = Schema.decodeUnknown(ClaimOutlook)
/** The claim's rows: the events claimed, or one row with a null id when none was (it always returns the outlook). */
const decodeClaimed = Schema.decodeUnknown(Schema.Array(Schema.Union(ClaimedRow, Schema.Struct({ id: Schema.Null }))))
export type ClaimedEvent = typeof ClaimedRow.Type & { readonly claimToken: string }

/** An attempt's result, to record. */
export interface AttemptResult {
  readonly id: string
  readonly claimToken: string
  readonly status: number
  readonly delivered: boolean
  readonly at: Date
  /** When the next attempt is due; null: the run is over (delivered, or failed for good). */
  readonly nextAttemptAt: Date | null
}

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
    const sql = yield* SqlClient.SqlClient
    // PostgreSQL: transactions of prepared statements in one round trip; PGlite serves one process
    const direct = yield* DirectTransactions

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
     * On PostgreSQL an advisory lock makes processes claim one at a time (so the candidates need no
     * row locks: only this statement claims, and its UPDATE checks each row is still due); PGlite
     * serves one process.
     */
    const claim = (limits: ClaimLimits, byMerchant = false) =>
      Effect.gen(function*() {
        const token = randomUUID()
        const window = Math.min(Math.max(limits.free * 2, 64), CLAIM_WINDOW_MAX)
        const params = [
          [...limits.held.keys()],
          [...limits.held.values()],
          limits.owner,
          limits.perMerchant,
          window * 2,
          window,
          limits.free,
          limits.leaseSeconds,
          token
        ]
        const text = byMerchant ? CLAIM_BY_MERCHANT : CLAIM
        const rows = yield* (Option.isSome(direct)
          ? Effect.promise(() =>
            direct.value((session) =>
              session.queriesAndCommit([
                [`SELECT pg_advisory_xact_lock($1), ${NO_SYNC_COMMIT}, ${CLAIM_PLAN}`, [CLAIM_LOCK_KEY]],
                [text, params]
              ])
            )
          ).pipe(Effect.flatMap((results) => results === undefined ? Effect.dieMessage("webhook claim rolled back") : Effect.succeed(results[1]!)))
          : sql.withTransaction(Effect.zipRight(sql.unsafe(`SELECT ${CLAIM_PLAN}`), sql.unsafe(text, params))))
        const outlook = yield* decodeOutlook(rows[0])
        const claimed = (yield* decodeClaimed(rows)).filter((row): row is typeof ClaimedRow.Type => row.id !== null)
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
     * changes nothing. On PostgreSQL a prepared statement sent with its transaction in one round
     * trip, as the claim is (it runs a few hundred times a second under a backlog).
     */
    const record = (results: ReadonlyArray<AttemptResult>) => {
      const params = [
        results.map((r) => r.id),
        results.map((r) => r.claimToken),
        results.map((r) => r.status),
        results.map((r) => r.delivered),
        results.map((r) => r.at.toISOString()),
        results.map((r) => r.nextAttemptAt?.toISOString() ?? null)
      ]
      return (Option.isSome(direct)
        ? Effect.tryPromise({
          try: () => direct.value((session) => session.queriesAndCommit([[RECORD, params]])),
          catch: (cause) => new SqlError.SqlError({ cause, message: "webhook results not recorded" })
        }).pipe(
          // a statement that failed rolled the transaction back: a failure too (the sender retries it)
          Effect.filterOrFail((rows) => rows !== undefined, () => new SqlError.SqlError({ cause: undefined, message: "webhook results rolled back" }))
        )
        : sql.unsafe(RECORD, params)).pipe(Effect.asVoid, Effect.withSpan("WebhookDeliveries.record"))
    }

    /** Gives claimed events back (shutdown): due again at once, for any process. */
    const release = (claims: ReadonlyArray<{ readonly id: string; readonly claimToken: string }>) =>
      claims.length === 0 ? Effect.void : sql`
        UPDATE webhook_events e SET delivery_status = 'pending', next_attempt_at = now(), lease_until = NULL,
          claim_token = NULL, lease_owner = NULL
        FROM unnest(${claims.map((c) => c.id)}::uuid[], ${claims.map((c) => c.claimToken)}::uuid[]) AS r(id, token)
        WHERE e.id = r.id AND e.claim_token = r.token AND e.delivery_status = 'sending'
        RETURNING pg_notify(${DUE_CHANNEL}, 'released')`.pipe(Effect.asVoid)

    const EventState = Schema.Struct({ id: Schema.String, status: Schema.String, leaseLive: Schema.Boolean })
    const findEvent = SqlSchema.findOne({
      Request: Schema.String,
      Result: EventState,
      execute: (id) =>
        sql`SELECT id, delivery_status AS status,
                             (delivery_status = 'sending' AND next_attempt_at > now()) AS "leaseLive"
                           FROM webhook_events WHERE id = ${id}`
    })

    /**
     * Support replay (spec 4.5): the event, same event_id and body, is due again now with a new run
     * of the retry schedule. "missing" for an unknown event; "sending" while an attempt holds it.
     */
    const replay = (id: string) =>
      Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(id)) return "missing" as const
        const rows = yield* sql`
          UPDATE webhook_events SET delivery_status = 'pending', next_attempt_at = now(), run_attempts = 0,
            lease_until = NULL, claim_token = NULL, lease_owner = NULL
          WHERE id = ${id} AND NOT (delivery_status = 'sending' AND next_attempt_at > now())
          RETURNING pg_notify(${DUE_CHANNEL}, 'replay')`
        if (rows.length > 0) return "queued" as const
        const found = yield* findEvent(id)
        return Option.isSome(found) ? "sending" as const : "missing" as const
      }).pipe(Effect.orDie, Effect.withSpan("WebhookDeliveries.replay"))

    /** Bulk recovery (CONTRACT 4): the merchant's failed events created at or after `since`, due again now. */
    const requeueFailed = SqlSchema.single({
      Request: Schema.Struct({ merchantId: Schema.String, since: Schema.DateFromSelf }),
      Result: CountRow,
      execute: ({ merchantId, since }) =>
        sql`WITH requeued AS (
              UPDATE webhook_events SET delivery_status = 'pending', next_attempt_at = now(), run_attempts = 0
              WHERE merchant_id = ${merchantId} AND delivery_status = 'failed' AND created_at >= ${since}
              RETURNING id)
            SELECT count(*) AS n, pg_notify(${DUE_CHANNEL}, 'recover') FROM requeued`
    })
    const recover = (merchantId: string, since: Date) =>
      requeueFailed({ merchantId, since }).pipe(
        Effect.map((row) => row.n),
        Effect.orDie,
        Effect.withSpan("WebhookDeliveries.recover")
      )

    /** Events due now (any merchant) and the age of the oldest, for /metrics. */
    const backlog = sql`
      SELECT count(*) AS due, extract(epoch FROM now() - min(created_at)) AS oldest FROM webhook_events
      WHERE delivery_status IN ('pending', 'sending') AND next_attempt_at <= now()`.pipe(
      rowsOf(Schema.Struct({ due: Int8, oldest: Schema.NullOr(Numeric) })),
      Effect.map((rows) => ({ due: rows[0]?.due ?? 0, oldestSeconds: rows[0]?.oldest ?? 0 })),
      Effect.orDie
    )

    return { claim, record, release, replay, recover, backlog } as const
  })
}) {}
