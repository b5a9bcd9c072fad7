/**
 * The SQL of the purchase worker (Worker.ts), every row decoded through its schema: the claim of
 * due purchases with when the next one falls due, the lock of a purchase this process still
 * leases, its state changes read back, a step's release, the first step of many purchases in one
 * statement, and the counts /metrics shows. What this process leases is `PurchaseHandover.owner`'s.
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { CountRow, rowsOf } from "../Domain/Db.js"
import type { FailureCode, PurchaseStatus } from "../Domain/Purchase.js"
import type { PreparedEvents } from "../Webhooks/Outbox.js"
import { LEASE_SECONDS, PurchaseHandover } from "./Handover.js"
import { PurchasesRepo } from "./Repo.js"
import { purchaseColumns, PurchaseRow } from "./Rows.js"

/** Purchases a claim leases at once. */
export const CLAIM_BATCH = 8

/** A timestamptz as pg (Date) or an expression's text (PGlite's LEAST of subqueries) gives it. */
const NextDue = Schema.NullOr(Schema.Union(Schema.DateFromSelf, Schema.String))

/** The claim's rows: the purchases leased, or one row with a null id when none was; each with the next due time. */
const ClaimRow = Schema.Union(
  Schema.Struct({ ...PurchaseRow.fields, nextDue: NextDue }),
  Schema.Struct({ id: Schema.Null, nextDue: NextDue })
)

const OwnedRow = Schema.Struct({ ...PurchaseRow.fields, leaseOwner: Schema.NullOr(Schema.String) })

export class WorkerRepo extends Effect.Service<WorkerRepo>()("WorkerRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { notifying } = yield* PurchasesRepo
    const owner = (yield* PurchaseHandover).owner
    const purchaseRows = rowsOf(PurchaseRow)

    /** Lets go of every purchase this process leases and announces them (shutdown). */
    const releaseAll = sql`UPDATE purchases SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ${owner}
                           RETURNING ${notifying(sql`id::text`)}`

    /**
     * Leases up to CLAIM_BATCH due purchases and reads them in the same round trip, with when the
     * next purchase it did not take falls due: one nobody holds at its next step, one held at its
     * lease's end (its process may have died; this process's own steps announce their next look
     * when they end). Only purchases already due can be held, so both minimums walk the due
     * index's early end. The claim's own rows are left out: the statement's subqueries see them as
     * they were before its UPDATE.
     */
    // purchases the worker still steps: in flight, or completed and watched for a reversal (the due index's predicate)
    const stillStepped = sql`(status IN ('created', 'processing', 'sent_to_steam') OR watch_until IS NOT NULL)`
    const claim = sql`
      WITH claimed AS (
        UPDATE purchases SET lease_owner = ${owner}, lease_until = now() + make_interval(secs => ${LEASE_SECONDS})
        WHERE id IN (
          SELECT id FROM purchases
          WHERE ${stillStepped}
            AND next_step_at <= now() AND (lease_until IS NULL OR lease_until < now())
          ORDER BY next_step_at LIMIT ${CLAIM_BATCH}
          FOR UPDATE SKIP LOCKED)
        RETURNING ${purchaseColumns(sql)})
      SELECT claimed.*, LEAST(
        (SELECT min(next_step_at) FROM purchases
         WHERE ${stillStepped}
           AND (lease_until IS NULL OR lease_until < now()) AND id NOT IN (SELECT id FROM claimed)),
        (SELECT min(lease_until) FROM purchases
         WHERE ${stillStepped}
           AND next_step_at <= now() AND lease_until >= now() AND id NOT IN (SELECT id FROM claimed))
      ) AS "nextDue"
      FROM (SELECT 1) AS one LEFT JOIN claimed ON true`.pipe(
      rowsOf(ClaimRow),
      Effect.map((rows) => ({
        purchases: rows.flatMap((row) => row.id === null ? [] : [row]),
        due: rows[0]?.nextDue ?? null
      }))
    )

    /** The purchase, locked, if this worker still holds its lease. */
    const lockOwned = (id: string) =>
      sql`SELECT ${purchaseColumns(sql)}, lease_owner AS "leaseOwner" FROM purchases WHERE id = ${id} FOR UPDATE`.pipe(
        rowsOf(OwnedRow),
        Effect.map((rows) =>
          Option.filter(Option.fromNullable<PurchaseRow & { readonly leaseOwner: string | null }>(rows[0]), (row) => row.leaseOwner === owner)
        )
      )

    /** Sets columns of a purchase and reads it back in the same statement. */
    const updateReturning = (id: string, set: Statement.Fragment) =>
      sql`UPDATE purchases SET ${set} WHERE id = ${id} RETURNING ${purchaseColumns(sql)}`.pipe(
        purchaseRows,
        Effect.flatMap((rows) => rows.length === 1 ? Effect.succeed(rows[0]!) : Effect.dieMessage(`purchase ${id} is gone`))
      )

    // a purchase's state changes, each read back
    /** created → processing: the provider has the order. */
    const toProcessing = (id: string) => updateReturning(id, sql`status = 'processing'`)
    /** The provider waits for its balance to be topped up. */
    const waitingTopUp = (id: string) => updateReturning(id, sql`topup_waiting = true`)
    /** The provider accepted the order. */
    const acknowledge = (id: string) => updateReturning(id, sql`acknowledged_at = now(), topup_waiting = false`)
    /** The trade offer sent, with the status it moves the purchase to. */
    const tradeOfferSent = (id: string, offer: { readonly id: string; readonly url: string }, status: PurchaseStatus) =>
      updateReturning(
        id,
        sql`trade_offer_id = ${offer.id}, trade_offer_url = ${offer.url},
            status = ${status}`
      )
    /** Delivered. */
    const complete = (id: string) => updateReturning(id, sql`status = 'completed', completed_at = now()`)
    /** Failed, with the provider's code and message. */
    const fail = (id: string, code: FailureCode, message: string) =>
      updateReturning(id, sql`status = 'failed', failure_code = ${code}, failure_message = ${message}`)
    /** The amount refunded. */
    const refunded = (id: string, cents: number) => updateReturning(id, sql`refunded_cents = ${cents}`)
    /** A completed trade reversed: failed with the reversal's code, what was refunded (null: left to review), no longer watched. */
    const revert = (id: string, code: FailureCode, message: string, refundedCents: number | null) =>
      updateReturning(
        id,
        sql`status = 'failed', failure_code = ${code}, failure_message = ${message},
            refunded_cents = ${refundedCents}, watch_until = NULL`
      )

    /** The provider request id of a purchase written before that was recorded: given once, kept. */
    const assignRequestId = SqlSchema.single({
      Request: Schema.String,
      Result: Schema.Struct({ requestId: Schema.String }),
      execute: (id) =>
        sql`UPDATE purchases SET provider_request_id = coalesce(provider_request_id, ${randomUUID()})
            WHERE id = ${id} RETURNING provider_request_id AS "requestId"`
    })

    /**
     * The SET of a step's end: the lease released and the next look scheduled (`nextStep`: a time, or
     * an expression of the statement, for several purchases at once).
     */
    const released = (nextStep: Date | null | Statement.Fragment, watchUntil: Date | null) =>
      sql`lease_owner = NULL, lease_until = NULL, updated_at = now(),
          next_step_at = coalesce(${nextStep}, next_step_at), watch_until = ${watchUntil}`

    /** A step's end for one purchase, announced. */
    const release = (id: string, nextStep: Date | null, watchUntil: Date | null) =>
      sql`UPDATE purchases SET ${released(nextStep, watchUntil)} WHERE id = ${id} RETURNING ${notifying(id)}`

    /**
     * Created purchases this worker leases moved to processing with their `purchase.processing`
     * events, released and scheduled at `dueAt` (one per id), in one statement; the ids it moved.
     * The events are the outbox's rows (Webhooks: webhook_events, bodies prepared by Outbox.ts),
     * written here so that each exists exactly when its purchase moved: only those whose order id
     * the CTE `moved` has.
     */
    const moveToProcessing = (moves: ReadonlyArray<{ readonly id: string; readonly dueAt: Date }>, events: PreparedEvents) =>
      sql`
        WITH next AS (
          SELECT * FROM unnest(${moves.map(({ id }) => id)}::uuid[], ${moves.map(({ dueAt }) => dueAt.toISOString())}::timestamptz[])
            AS next(id, due_at)),
        moved AS (
          UPDATE purchases SET status = 'processing', ${released(sql`next.due_at`, null)}
          FROM next WHERE purchases.id = next.id AND purchases.lease_owner = ${owner} AND purchases.status = 'created'
          RETURNING purchases.id),
        events AS (
          INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at, next_attempt_at)
          SELECT e.id, e.merchant_id, e.event_type, e.order_id, e.body, e.created_at, e.created_at + make_interval(secs => ${events.firstDelaySeconds})
          FROM unnest(${events.rows.map((e) => e.id)}::uuid[], ${events.rows.map((e) => e.merchantId)}::uuid[],
                      ${events.rows.map((e) => e.type)}::text[], ${events.rows.map((e) => e.orderId)}::uuid[],
                      ${events.rows.map((e) => e.body)}::text[], ${events.rows.map((e) => e.createdAt.toISOString())}::timestamptz[])
            AS e(id, merchant_id, event_type, order_id, body, created_at)
          WHERE e.order_id IN (SELECT id FROM moved))
        SELECT moved.id, (SELECT ${notifying(sql`string_agg(id::text, ',')`)} FROM moved) FROM moved`.pipe(
        rowsOf(Schema.Struct({ id: Schema.String })),
        Effect.map((rows) => new Set(rows.map((row) => row.id)))
      )

    const countRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ status: Schema.String, ...CountRow.fields }),
      execute: () => sql`SELECT status, count(*) AS n FROM purchases GROUP BY status`
    })
    /** Purchases by status. */
    const countByStatus = countRows(undefined)

    const dueRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: CountRow,
      execute: () =>
        sql`SELECT count(*) AS n FROM purchases
            WHERE status IN ('created', 'processing', 'sent_to_steam') AND next_step_at <= now()`
    })
    /** In-flight purchases due for a step. */
    const countDue = Effect.map(dueRows(undefined), (rows) => rows[0]?.n ?? 0)

    return {
      withTransaction: sql.withTransaction,
      releaseAll,
      claim,
      lockOwned,
      toProcessing,
      waitingTopUp,
      acknowledge,
      tradeOfferSent,
      complete,
      fail,
      refunded,
      revert,
      assignRequestId,
      release,
      moveToProcessing,
      countByStatus,
      countDue
    } as const
  }),
  dependencies: [PurchasesRepo.Default, PurchaseHandover.Default]
}) {}
