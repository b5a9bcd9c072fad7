/**
 * The SQL of webhook delivery: claiming due events with a lease, recording attempts, letting go at
 * shutdown, and the support procedures (replay, recovery). Each claim holds an advisory lock for its
 * transaction, so processes claim one at a time and the per-merchant limit holds across all of them.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"

export const DUE_CHANNEL = "webhook_events_due"
const CLAIM_LOCK_KEY = 7_311_024

/** A timestamptz as pg (Date) or an expression's text gives it. */
const Instant = Schema.Union(Schema.DateFromSelf, Schema.DateFromString)

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

export interface ClaimLimits {
  /** Attempts this process may still start. */
  readonly free: number
  readonly perMerchant: number
  readonly leaseSeconds: number
}

export class WebhookDeliveries extends Effect.Service<WebhookDeliveries>()("WebhookDeliveries", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Live claims per merchant: sending rows whose lease has not ended. */
    const busy = (perMerchant: number) => sql`
      busy AS (
        SELECT merchant_id, count(*)::int AS n FROM webhook_events
        WHERE delivery_status = 'sending' AND next_attempt_at > now()
        GROUP BY merchant_id
        HAVING count(*) >= 1),
      full_merchants AS (SELECT merchant_id FROM busy WHERE n >= ${perMerchant})`

    /**
     * Leases up to `free` due events, oldest due first, at most `perMerchant` per merchant counting
     * those already in flight anywhere, with what an attempt needs (URL, secrets).
     */
    const claim = (limits: ClaimLimits) =>
      sql.withTransaction(Effect.gen(function*() {
        const token = randomUUID()
        yield* sql`SELECT pg_advisory_xact_lock(${CLAIM_LOCK_KEY})`
        const rows = yield* sql`
          WITH ${busy(limits.perMerchant)},
          candidates AS (
            SELECT id, merchant_id, next_attempt_at, seq FROM webhook_events
            WHERE delivery_status IN ('pending', 'sending') AND next_attempt_at <= now()
              AND merchant_id NOT IN (SELECT merchant_id FROM full_merchants)
            ORDER BY next_attempt_at, seq
            LIMIT ${Math.max(limits.free * 4, 64)}
            FOR UPDATE SKIP LOCKED),
          ranked AS (
            SELECT c.id, c.next_attempt_at, c.seq,
              row_number() OVER (PARTITION BY c.merchant_id ORDER BY c.next_attempt_at, c.seq) + coalesce(b.n, 0) AS slot
            FROM candidates c LEFT JOIN busy b ON b.merchant_id = c.merchant_id),
          chosen AS (
            SELECT id FROM ranked WHERE slot <= ${limits.perMerchant}
            ORDER BY next_attempt_at, seq LIMIT ${limits.free})
          UPDATE webhook_events e
          SET delivery_status = 'sending', claim_token = ${token},
              lease_until = now() + make_interval(secs => ${limits.leaseSeconds}),
              next_attempt_at = now() + make_interval(secs => ${limits.leaseSeconds})
          FROM chosen, merchants m
          WHERE e.id = chosen.id AND m.id = e.merchant_id
          RETURNING e.id, e.merchant_id AS "merchantId", e.event_type AS "eventType", e.body,
            e.created_at AS "createdAt", e.run_attempts AS "runAttempts", m.webhook_url AS "webhookUrl",
            m.webhook_secret AS secret,
            CASE WHEN m.webhook_secret_previous_until > now() THEN m.webhook_secret_previous END AS "previousSecret"`
        const decoded = yield* Schema.decodeUnknown(Schema.Array(ClaimedRow))(rows)
        return decoded.map((row): ClaimedEvent => ({ ...row, claimToken: token }))
      })).pipe(Effect.orDie, Effect.withSpan("WebhookDeliveries.claim"))

    /**
     * When the next event falls due that a claim could take now (its merchant below the limit); a
     * time in the past means now. None: nothing is waiting.
     */
    const nextDue = (perMerchant: number) =>
      sql`WITH ${busy(perMerchant)}
          SELECT min(next_attempt_at) AS "nextDue" FROM webhook_events
          WHERE delivery_status IN ('pending', 'sending') AND merchant_id NOT IN (SELECT merchant_id FROM full_merchants)`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ nextDue: Schema.NullOr(Instant) })))),
        Effect.map((rows) => Option.fromNullable(rows[0]?.nextDue)),
        Effect.orDie
      )

    /** Records attempts; a result whose claim is no longer held (its lease ended, it was reclaimed) changes nothing. */
    const record = (results: ReadonlyArray<AttemptResult>) =>
      sql`
        UPDATE webhook_events e SET
          delivery_attempts = e.delivery_attempts + 1,
          run_attempts = e.run_attempts + 1,
          last_response_code = r.status,
          delivery_status = CASE WHEN r.delivered THEN 'delivered' WHEN r.next_at IS NULL THEN 'failed' ELSE 'pending' END,
          delivered_at = CASE WHEN r.delivered THEN r.at ELSE e.delivered_at END,
          next_attempt_at = coalesce(r.next_at, r.at),
          lease_until = NULL, claim_token = NULL
        FROM unnest(${results.map((r) => r.id)}::uuid[], ${results.map((r) => r.claimToken)}::uuid[],
                    ${results.map((r) => r.status)}::int[], ${results.map((r) => r.delivered)}::bool[],
                    ${results.map((r) => r.at.toISOString())}::timestamptz[],
                    ${results.map((r) => r.nextAttemptAt?.toISOString() ?? null)}::timestamptz[])
          AS r(id, token, status, delivered, at, next_at)
        WHERE e.id = r.id AND e.claim_token = r.token AND e.delivery_status = 'sending'`.pipe(
        Effect.asVoid,
        Effect.withSpan("WebhookDeliveries.record")
      )

    /** Gives claimed events back (shutdown): due again at once, for any process. */
    const release = (claims: ReadonlyArray<{ readonly id: string; readonly claimToken: string }>) =>
      claims.length === 0 ? Effect.void : sql`
        UPDATE webhook_events e SET delivery_status = 'pending', next_attempt_at = now(), lease_until = NULL, claim_token = NULL
        FROM unnest(${claims.map((c) => c.id)}::uuid[], ${claims.map((c) => c.claimToken)}::uuid[]) AS r(id, token)
        WHERE e.id = r.id AND e.claim_token = r.token AND e.delivery_status = 'sending'
        RETURNING pg_notify(${DUE_CHANNEL}, 'released')`.pipe(Effect.asVoid)

    const EventState = Schema.Struct({ id: Schema.String, status: Schema.String, leaseLive: Schema.Boolean })
    const findEvent = SqlSchema.findOne({
      Request: Schema.String,
      Result: EventState,
      execute: (id) => sql`SELECT id, delivery_status AS status,
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
            lease_until = NULL, claim_token = NULL
          WHERE id = ${id} AND NOT (delivery_status = 'sending' AND next_attempt_at > now())
          RETURNING pg_notify(${DUE_CHANNEL}, 'replay')`
        if (rows.length > 0) return "queued" as const
        const found = yield* findEvent(id)
        return Option.isSome(found) ? "sending" as const : "missing" as const
      }).pipe(Effect.orDie, Effect.withSpan("WebhookDeliveries.replay"))

    /** Bulk recovery (CONTRACT 4): the merchant's failed events created at or after `since`, due again now. */
    const recover = (merchantId: string, since: Date) =>
      sql<{ n: number | string }>`
        WITH requeued AS (
          UPDATE webhook_events SET delivery_status = 'pending', next_attempt_at = now(), run_attempts = 0
          WHERE merchant_id = ${merchantId} AND delivery_status = 'failed' AND created_at >= ${since}
          RETURNING id)
        SELECT count(*) AS n, pg_notify(${DUE_CHANNEL}, 'recover') FROM requeued`.pipe(
        Effect.map((rows) => Number(rows[0]?.n ?? 0)),
        Effect.orDie,
        Effect.withSpan("WebhookDeliveries.recover")
      )

    /** Events due now (any merchant) and the age of the oldest, for /metrics. */
    const backlog = sql<{ due: number | string; oldest: number | string | null }>`
      SELECT count(*) AS due, extract(epoch FROM now() - min(created_at)) AS oldest FROM webhook_events
      WHERE delivery_status IN ('pending', 'sending') AND next_attempt_at <= now()`.pipe(
      Effect.map((rows) => ({ due: Number(rows[0]?.due ?? 0), oldestSeconds: Number(rows[0]?.oldest ?? 0) })),
      Effect.orDie
    )

    return { claim, nextDue, record, release, replay, recover, backlog } as const
  })
}) {}
