/**
 * The SQL of the catalogue engine and the supplier sync (the change log's writes are ChangeLogRepo.ts's,
 * the bulk writes of new items NewItemsRepo.ts's): the state row, the items at the log's head in
 * one snapshot, the log after a cursor and its notification; the end of a reconciliation, the
 * log's pruning, and the sync leader's lock.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { DbNotifications } from "../Db/Notifications.js"
import { Int8 } from "../Domain/Db.js"
import { guardOf } from "../Domain/Guard.js"
import { CHANGES_CHANNEL } from "./ChangeLog.js"

const LEADER_LOCK_KEY = 7_311_002
/** Items read at a time by a load (`fetchItems`). */
export const LOAD_PAGE = 20_000

export const StateRow = Schema.Struct({ epoch: Schema.Number, head: Int8, prunedThrough: Int8, reconciled: Schema.Boolean })
export type StateRow = typeof StateRow.Type

export const ChangeRow = Schema.Struct({
  seq: Int8,
  epoch: Schema.Number,
  op: Schema.Literal("upsert", "remove"),
  itemId: Schema.String,
  item: Schema.NullOr(Schema.String)
})
export type ChangeRow = typeof ChangeRow.Type

// A load reads up to a million rows: checked by compiled guards (Domain/Guard.ts), not decoded.
const LoadRow = Schema.Struct({ id: Schema.String, item: Schema.String, priceCents: Schema.Union(Schema.String, Schema.Number) })
const LogRow = Schema.Struct({
  seq: Schema.Union(Schema.String, Schema.Number),
  epoch: Schema.Number,
  op: Schema.Literal("upsert", "remove"),
  itemId: Schema.String
})
const TextRow = Schema.Struct({ seq: Schema.Union(Schema.String, Schema.Number), item: Schema.String })
const isLoadRow = guardOf(LoadRow)
const isLogRow = guardOf(LogRow)
const isTextRow = guardOf(TextRow)

type Row = Readonly<Record<string, unknown>>
/** The rows, when each passes `is`; else a defect naming the first that does not. */
const checked = <A extends Row>(is: (row: unknown) => row is A, problem: (row: Row) => string) => (rows: ReadonlyArray<Row>): Effect.Effect<ReadonlyArray<A>> =>
  rows.every(is) ? Effect.succeed(rows) : Effect.dieMessage(problem(rows.find((row) => !is(row))!))

export class CatalogueRepo extends Effect.Service<CatalogueRepo>()("CatalogueRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const notifications = yield* DbNotifications

    /** The engine's epoch, the log's head and pruned point, and whether the supplier sync has reconciled once. */
    const readState = SqlSchema.single({
      Request: Schema.Void,
      Result: StateRow,
      execute: () =>
        sql`
          SELECT epoch, head_seq AS head, pruned_through AS "prunedThrough", reconciled_at IS NOT NULL AS reconciled
          FROM catalogue_state`
    })(undefined)

    /** Runs `read` in one snapshot of the database: PostgreSQL's REPEATABLE READ (PGlite has one connection). */
    const inSnapshot = <A, E, R>(read: Effect.Effect<A, E, R>) =>
      sql.withTransaction(Effect.zipRight(
        sql.onDialectOrElse({ pg: () => sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`, orElse: () => Effect.void }),
        read
      ))

    /**
     * Opens the load's cursor over the active items (in a snapshot: `inSnapshot`). Read in the
     * table's order: in id order, each row was a random heap read, and a million of them took half
     * a minute.
     */
    const openItems = sql`DECLARE catalogue_load NO SCROLL CURSOR FOR
             SELECT id, item, price_cents AS "priceCents" FROM catalogue_items WHERE status = 'active'`.pipe(Effect.asVoid)

    /** The load cursor's next LOAD_PAGE items (fewer: the last page). */
    const fetchItems = sql`FETCH ${sql.literal(String(LOAD_PAGE))} FROM catalogue_load`.pipe(
      Effect.flatMap(checked(isLoadRow, (row) => `catalogue row ${String(row["id"])} is not (id, item, price_cents)`))
    )

    /** The log's changes after `after` through `through`, at most `limit`, in order, without their texts (about 60 bytes each). */
    const logBetween = (after: number, through: number, limit: number) =>
      sql`
        SELECT seq, epoch, op, item_id AS "itemId" FROM catalogue_changes
        WHERE seq > ${after} AND seq <= ${through} ORDER BY seq LIMIT ${limit}`.pipe(
        Effect.flatMap(checked(isLogRow, (row) => `change log row ${String(row["seq"])} is not (seq, epoch, op, item_id)`))
      )

    /** The logged items' texts of these seqs. */
    const logTexts = (seqs: ReadonlyArray<number>) =>
      sql`SELECT seq, item FROM catalogue_changes WHERE seq IN ${sql.in(seqs)}`.pipe(
        Effect.flatMap(checked(isTextRow, (row) => `change log row ${String(row["seq"])} has no item`))
      )

    /** The log's changes after `after`, at most `limit`, in order, with their items' texts. */
    const changesAfter = SqlSchema.findAll({
      Request: Schema.Struct({ after: Schema.Number, limit: Schema.Number }),
      Result: ChangeRow,
      execute: ({ after, limit }) =>
        sql`
          SELECT seq, epoch, op, item_id AS "itemId", item FROM catalogue_changes
          WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`
    })

    /** A notification at each commit that logged changes or ended a reconciliation: LISTEN on CHANGES_CHANNEL. */
    const changeNotifications = notifications.listen(CHANGES_CHANNEL)

    /** Records that the supplier sync has reconciled the catalogue; every process's engine is woken. */
    const markReconciled = sql`UPDATE catalogue_state SET reconciled_at = now() RETURNING pg_notify(${CHANGES_CHANNEL}, head_seq::text)`
      .pipe(Effect.asVoid)

    /** Deletes changes older than the retention and records how far the log is pruned. */
    const pruneLog = (retentionSeconds: number) =>
      sql`
        WITH gone AS (
          DELETE FROM catalogue_changes WHERE created_at < now() - make_interval(secs => ${retentionSeconds})
          RETURNING seq)
        UPDATE catalogue_state SET pruned_through = GREATEST(pruned_through, (SELECT coalesce(max(seq), 0) FROM gone))`.pipe(Effect.asVoid)

    /**
     * A connection reserved for the supplier sync's leadership: `tryLock` takes the leader's
     * advisory lock if no process holds it (whether it did), `check` shows the connection lives.
     * A session lock outlives the scope on a pooled connection: it is let go before the connection is.
     */
    const leaderConnection = Effect.gen(function*() {
      const connection = yield* sql.reserve
      yield* Effect.addFinalizer(() => Effect.ignore(connection.executeValues("SELECT pg_advisory_unlock_all()", [])))
      return {
        tryLock: Effect.map(connection.executeValues("SELECT pg_try_advisory_lock($1)", [LEADER_LOCK_KEY]), (rows) => rows[0]?.[0] === true),
        check: Effect.asVoid(connection.executeValues("SELECT 1", []))
      } as const
    })

    return {
      readState,
      inSnapshot,
      openItems,
      fetchItems,
      logBetween,
      logTexts,
      changesAfter,
      changeNotifications,
      markReconciled,
      pruneLog,
      leaderConnection
    } as const
  })
}) {}
