/**
 * The SQL of webhook delivery (Deliveries.ts holds the rules): claims of due events with a lease,
 * attempts' results, release at shutdown, replay and recovery, the backlog, the due notification.
 * The claim and the record run hundreds of times a second under a backlog: texts with numbered
 * parameters, so that on PostgreSQL each is a prepared statement sent with its transaction in one
 * round trip.
 */
import { SqlClient, SqlError, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { DirectTransactions } from "../Db/Database.js"
import { DbNotifications } from "../Db/Notifications.js"
import { CountRow, Int8, Numeric, rowsOf } from "../Domain/Db.js"

export const DUE_CHANNEL = "webhook_events_due"
const CLAIM_LOCK_KEY = 7_311_024

/**
 * Claims and results are bookkeeping of at-least-once delivery: one lost in a crash of the
 * database only means an event is sent again. Their commits do not wait for the disk.
 */
const NO_SYNC_COMMIT = "set_config('synchronous_commit', 'off', true)"

/**
 * The claim reads the due events in the order of their index and stops at its limit. A growing
 * backlog outruns the table's statistics (autovacuum analyzes it a minute or more later, if at
 * all), and with them the planner took a bitmap scan of every due event and a sort instead: 15 ms
 * a claim at 20,000 due events, against under 4 ms in the index's order, and the claims ran a few
 * hundred times a second under POST /buy. Set for the claim's transaction only.
 */
export const CLAIM_PLAN = "set_config('enable_bitmapscan', 'off', true)"

/** The most due events one claim looks at (twice that many are scanned). */
export const CLAIM_WINDOW_MAX = 128

/**
 * The claim (see `claim` below): planned once per connection (planning it cost more than running
 * it). $1/$2 the events held per merchant, $3 the owner, $4 the limit per merchant, $5 the scan,
 * $6 the window, $7 the free places, $8 the lease, $9 the claim token.
 */
const claimStatement = (byMerchant: boolean) => `
  WITH RECURSIVE ${
  byMerchant
    ? `
  -- every merchant with events to send, one index probe each (a loose index scan)
  merchants_with_events AS (
    (SELECT merchant_id FROM webhook_events WHERE delivery_status IN ('pending', 'sending') ORDER BY merchant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.merchant_id FROM webhook_events e
            WHERE e.delivery_status IN ('pending', 'sending') AND e.merchant_id > h.merchant_id
            ORDER BY e.merchant_id LIMIT 1)
    FROM merchants_with_events h WHERE h.merchant_id IS NOT NULL),`
    : ""
}
  -- held events whose lease runs (lease_until: a held event's next_attempt_at, and not a key of
  -- webhook_events_due, which would read every event scheduled for later too)
  live AS (
    SELECT merchant_id, lease_owner FROM webhook_events
    WHERE delivery_status = 'sending' AND lease_until > now()),
  held AS (
    SELECT merchant_id, n FROM unnest($1::uuid[], $2::int[]) AS h(merchant_id, n)),
  closed AS (
    SELECT merchant_id FROM live WHERE lease_owner IS DISTINCT FROM $3::text
    UNION SELECT merchant_id FROM held WHERE n >= $4::int),
  ${
  byMerchant
    ? `
  candidates AS (
    SELECT r.id, r.merchant_id, r.next_attempt_at, r.seq
    FROM merchants_with_events h CROSS JOIN LATERAL (
      SELECT id, merchant_id, next_attempt_at, seq FROM webhook_events
      WHERE merchant_id = h.merchant_id AND delivery_status IN ('pending', 'sending') AND next_attempt_at <= now()
      ORDER BY next_attempt_at, seq LIMIT $4::int) AS r
    WHERE h.merchant_id IS NOT NULL AND h.merchant_id NOT IN (SELECT merchant_id FROM closed)
    ORDER BY r.next_attempt_at, r.seq LIMIT $6::int),
  scanned AS (SELECT 1 WHERE $5::int < 0),`
    : `
  scanned AS (
    SELECT id, merchant_id, next_attempt_at, seq FROM webhook_events
    WHERE delivery_status IN ('pending', 'sending') AND next_attempt_at <= now()
    ORDER BY next_attempt_at, seq LIMIT $5::int),
  candidates AS (
    SELECT * FROM scanned WHERE merchant_id NOT IN (SELECT merchant_id FROM closed)
    ORDER BY next_attempt_at, seq LIMIT $6::int),`
}
  ranked AS (
    SELECT c.id, c.next_attempt_at, c.seq,
      row_number() OVER (PARTITION BY c.merchant_id ORDER BY c.next_attempt_at, c.seq) + coalesce(h.n, 0) AS slot
    FROM candidates c LEFT JOIN held h ON h.merchant_id = c.merchant_id),
  chosen AS (
    SELECT id FROM ranked WHERE slot <= $4::int
    ORDER BY next_attempt_at, seq LIMIT $7::int),
  claimed AS (
    UPDATE webhook_events e
    SET delivery_status = 'sending', claim_token = $9::uuid, lease_owner = $3::text,
        lease_until = now() + make_interval(secs => $8::int),
        next_attempt_at = now() + make_interval(secs => $8::int)
    FROM chosen, merchants m
    -- still due once its row lock is had (a replay or a record may have changed it meanwhile)
    WHERE e.id = chosen.id AND m.id = e.merchant_id
      AND e.delivery_status IN ('pending', 'sending') AND e.next_attempt_at <= now()
    RETURNING e.id, e.merchant_id AS "merchantId", e.event_type AS "eventType", e.body,
      e.created_at AS "createdAt", e.run_attempts AS "runAttempts", m.webhook_url AS "webhookUrl",
      m.webhook_secret AS secret,
      CASE WHEN m.webhook_secret_previous_until > now() THEN m.webhook_secret_previous END AS "previousSecret")
  SELECT claimed.*,
    (SELECT count(*) FROM ranked WHERE slot <= $4::int) > (SELECT count(*) FROM chosen) AS "leftOut",
    (SELECT count(*) FROM candidates) >= $6::int AS "windowFull",
    (SELECT count(*) FROM scanned) >= $5::int AS "deep",
    (SELECT min(next_attempt_at) FROM webhook_events
     WHERE delivery_status IN ('pending', 'sending') AND next_attempt_at > now()
       AND merchant_id NOT IN (SELECT merchant_id FROM closed)) AS "nextDue"
  FROM (SELECT 1) AS one LEFT JOIN claimed ON true`
export const CLAIM = claimStatement(false)
const CLAIM_BY_MERCHANT = claimStatement(true)

/** An attempt's result per row of the arrays: $1 id, $2 claim token, $3 status, $4 delivered, $5 at, $6 next attempt. */
const RECORD = `
  UPDATE webhook_events e SET
    delivery_attempts = e.delivery_attempts + 1,
    run_attempts = e.run_attempts + 1,
    last_response_code = r.status,
    delivery_status = CASE WHEN r.delivered THEN 'delivered' WHEN r.next_at IS NULL THEN 'failed' ELSE 'pending' END,
    delivered_at = CASE WHEN r.delivered THEN r.at ELSE e.delivered_at END,
    next_attempt_at = coalesce(r.next_at, r.at),
    lease_until = NULL, claim_token = NULL, lease_owner = NULL
  FROM (SELECT ${NO_SYNC_COMMIT}) AS bookkeeping,
       unnest($1::uuid[], $2::uuid[], $3::int[], $4::bool[], $5::timestamptz[], $6::timestamptz[])
    AS r(id, token, status, delivered, at, next_at)
  WHERE e.id = r.id AND e.claim_token = r.token AND e.delivery_status = 'sending'`

/** A timestamptz as pg (Date) or an expression's text gives it. */
const Instant = Schema.Union(Schema.DateFromSelf, Schema.DateFromString)

const ClaimOutlook = Schema.Struct({
  leftOut: Schema.Boolean,
  windowFull: Schema.Boolean,
  deep: Schema.Boolean,
  nextDue: Schema.NullOr(Instant)
})

/** A claimed event, with what an attempt needs (URL, secrets). */
export const ClaimedRow = Schema.Struct({
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
export type ClaimedRow = typeof ClaimedRow.Type
const decodeOutlook = Schema.decodeUnknown(ClaimOutlook)
/** The claim's rows: the events claimed, or one row with a null id when none was (it always returns the outlook). */
const decodeClaimed = Schema.decodeUnknown(Schema.Array(Schema.Union(ClaimedRow, Schema.Struct({ id: Schema.Null }))))

/** The claim's parameters ($1 to $9 of CLAIM). */
export interface ClaimRequest {
  readonly held: ReadonlyMap<string, number>
  readonly owner: string
  readonly perMerchant: number
  readonly scan: number
  readonly window: number
  readonly free: number
  readonly leaseSeconds: number
  readonly token: string
  readonly byMerchant: boolean // CLAIM_BY_MERCHANT: each merchant with events looked at in turn
}

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

const EventState = Schema.Struct({ id: Schema.String, status: Schema.String, leaseLive: Schema.Boolean })

export class WebhookDeliveriesRepo extends Effect.Service<WebhookDeliveriesRepo>()("WebhookDeliveriesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const notifications = yield* DbNotifications
    // PostgreSQL: transactions of prepared statements in one round trip; PGlite serves one process
    const direct = yield* DirectTransactions

    /**
     * Leases due events (CLAIM or CLAIM_BY_MERCHANT); the outlook (its first row) and the events
     * claimed. On PostgreSQL an advisory lock makes processes claim one at a time (so the
     * candidates need no row locks: only this statement claims, and its UPDATE checks each row is
     * still due); PGlite serves one process.
     */
    const claim = (request: ClaimRequest) =>
      Effect.gen(function*() {
        const params = [
          [...request.held.keys()],
          [...request.held.values()],
          request.owner,
          request.perMerchant,
          request.scan,
          request.window,
          request.free,
          request.leaseSeconds,
          request.token
        ]
        const text = request.byMerchant ? CLAIM_BY_MERCHANT : CLAIM
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
        const claimed = (yield* decodeClaimed(rows)).filter((row): row is ClaimedRow => row.id !== null)
        return { outlook, claimed }
      })

    /**
     * Records attempts (RECORD); a result whose claim is no longer held (its lease ended, it was
     * reclaimed) changes nothing. On PostgreSQL a prepared statement sent with its transaction in
     * one round trip, as the claim is.
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
        : sql.unsafe(RECORD, params)).pipe(Effect.asVoid)
    }

    /** Makes claimed events pending and due at once, for any process, if their claims still hold. */
    const release = (claims: ReadonlyArray<{ readonly id: string; readonly claimToken: string }>) =>
      sql`
        UPDATE webhook_events e SET delivery_status = 'pending', next_attempt_at = now(), lease_until = NULL,
          claim_token = NULL, lease_owner = NULL
        FROM unnest(${claims.map((c) => c.id)}::uuid[], ${claims.map((c) => c.claimToken)}::uuid[]) AS r(id, token)
        WHERE e.id = r.id AND e.claim_token = r.token AND e.delivery_status = 'sending'
        RETURNING pg_notify(${DUE_CHANNEL}, 'released')`.pipe(Effect.asVoid)

    /** Makes the event due now with a new run of the retry schedule, unless an attempt holds it; whether it did. */
    const requeue = (id: string) =>
      sql`
        UPDATE webhook_events SET delivery_status = 'pending', next_attempt_at = now(), run_attempts = 0,
          lease_until = NULL, claim_token = NULL, lease_owner = NULL
        WHERE id = ${id} AND NOT (delivery_status = 'sending' AND next_attempt_at > now())
        RETURNING pg_notify(${DUE_CHANNEL}, 'replay')`.pipe(Effect.map((rows) => rows.length > 0))

    /** The event's delivery status and whether an attempt's lease on it runs. */
    const findEvent = SqlSchema.findOne({
      Request: Schema.String,
      Result: EventState,
      execute: (id) =>
        sql`SELECT id, delivery_status AS status,
                             (delivery_status = 'sending' AND next_attempt_at > now()) AS "leaseLive"
                           FROM webhook_events WHERE id = ${id}`
    })

    /** The merchant's failed events created at or after `since`, due again now with a new run; how many. */
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

    /** Events due now (any merchant) and the age in seconds of the oldest (one row). */
    const backlog = sql`
      SELECT count(*) AS due, extract(epoch FROM now() - min(created_at)) AS oldest FROM webhook_events
      WHERE delivery_status IN ('pending', 'sending') AND next_attempt_at <= now()`.pipe(rowsOf(Schema.Struct({ due: Int8, oldest: Schema.NullOr(Numeric) })))

    /** A notification whenever events fall due (written, released, replayed, recovered): LISTEN on DUE_CHANNEL. */
    const dueNotifications = notifications.listen(DUE_CHANNEL)

    return { claim, record, release, requeue, findEvent, requeueFailed, backlog, dueNotifications } as const
  })
}) {}
