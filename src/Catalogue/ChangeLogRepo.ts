/**
 * The SQL of the change log (ChangeLog.ts): the catalogue's items and their log, written by the
 * same statement under the current epoch with a gapless sequence (the feed cursor). The row lock on
 * catalogue_state's head orders writers, so sequences commit in order; pg_notify wakes every
 * process's engine at commit. A buy's reservation of its item is written by the buy's own statement
 * (Purchases/BuyStatements.ts) and logged here after (`logReservations`).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Int8, rowsOf } from "../Domain/Db.js"

export const CHANGES_CHANNEL = "catalogue_changes"

/** An item as an upsert writes it: its stored JSON text and sim hints already made (a type: a record of columns). */
export type ItemWrite = {
  readonly id: string
  readonly market_hash_name: string
  readonly price_cents: number
  readonly provider_price_cents: number
  readonly status: "active"
  readonly item: string
  readonly sim: string | null
  readonly source: string
}

const loggedChangeRows = rowsOf(Schema.Struct({ seq: Int8, epoch: Schema.Number, id: Schema.String }))
const loggedRows = rowsOf(Schema.Struct({ logged: Int8 }))
const loggedCount = (rows: ReadonlyArray<{ readonly logged: number }>) => rows[0]?.logged ?? 0

export class ChangeLogRepo extends Effect.Service<ChangeLogRepo>()("ChangeLogRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * The steps that log what the CTE `written` (id, item) wrote, as changes of `op` at the head of
     * the log, in the statement that wrote them: the item's text is sent once, not again for its log
     * row. The head's row lock, taken here, orders writers; the CTE `logged` is what it logged
     * (seq, epoch, item_id), for the statement's answer.
     */
    const logWritten = (op: "upsert" | "remove") =>
      sql`
      numbered AS (SELECT id, item, row_number() OVER () AS n, count(*) OVER () AS total FROM written),
      head AS (
        UPDATE catalogue_state SET head_seq = head_seq + (SELECT count(*) FROM written)
        WHERE EXISTS (SELECT 1 FROM written) RETURNING epoch, head_seq),
      logged AS (
        INSERT INTO catalogue_changes (seq, epoch, op, item_id, item)
        SELECT head.head_seq - numbered.total + numbered.n, head.epoch, ${sql.literal(`'${op}'`)}, numbered.id, numbered.item FROM head, numbered
        RETURNING seq, epoch, item_id)`

    // An upsert leaves unchanged items and items reserved by a purchase alone, and does not log them.
    const upsertConflict = sql`
      ON CONFLICT (id) DO UPDATE SET market_hash_name = EXCLUDED.market_hash_name, price_cents = EXCLUDED.price_cents,
        provider_price_cents = EXCLUDED.provider_price_cents, status = 'active', item = EXCLUDED.item,
        sim = EXCLUDED.sim, source = EXCLUDED.source, updated_at = now()
      WHERE catalogue_items.status <> 'reserved'
        AND (catalogue_items.status <> 'active' OR catalogue_items.item <> EXCLUDED.item
             OR catalogue_items.sim IS DISTINCT FROM EXCLUDED.sim)
      RETURNING id, item`

    /**
     * The upserts as one statement of arrays, for PGlite's binary parameters (NewItems): $1 the
     * ids, $2 the names, $3 the prices and $4 the providers' prices in cents, $5 the items' texts,
     * $6 the sim hints (text[] and int8[]), $7 the source. It answers one row: the first seq it
     * logged, the epoch, and the ids it logged in seq order, comma-separated (its seqs are
     * consecutive); NULLs if it logged nothing. A row per change cost PGlite's thread and the
     * process a quarter of a second per 100,000 items to encode, parse and pass on.
     */
    const [upsertArrays, upsertArraysParameters] = sql`
      WITH written AS (
        INSERT INTO catalogue_items (id, market_hash_name, price_cents, provider_price_cents, status, item, sim, source)
        SELECT page.id::uuid, page.name, page.price, page.provider_price, 'active', page.item, page.sim, $7
        FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::text[], $6::text[]) AS page (id, name, price, provider_price, item, sim)
        ${upsertConflict}),
      ${logWritten("upsert")}
      SELECT min(seq) AS first, min(epoch) AS epoch, string_agg(item_id::text, ',' ORDER BY seq) AS ids FROM logged`.compile()
    // its placeholders are written above, so nothing in it may add one
    if (upsertArraysParameters.length > 0) throw new Error("ChangeLog: the array upsert must have no parameters of its own")

    /** Upserts items (each id once) and logs those it changed: their seq, epoch and id. */
    const upsertItems = (rows: ReadonlyArray<ItemWrite>) =>
      sql`
        WITH written AS (
          INSERT INTO catalogue_items ${sql.insert(rows)}
          ${upsertConflict}),
        ${logWritten("upsert")}
        SELECT seq, epoch, item_id AS id FROM logged`.pipe(loggedChangeRows)

    /** Removes the active items of these ids and logs their removal; how many it logged. */
    const removeItems = (ids: ReadonlyArray<string>) =>
      sql`
        WITH written AS (
          UPDATE catalogue_items SET status = 'removed', updated_at = now()
          WHERE id IN ${sql.in(ids)} AND status = 'active'
          RETURNING id, NULL::text AS item),
        ${logWritten("remove")}
        SELECT count(*) AS logged FROM logged`.pipe(loggedRows, Effect.map(loggedCount))

    /** Wakes every engine at commit with the log's head. */
    const notifyHead = sql`SELECT pg_notify(${CHANGES_CHANNEL}, head_seq::text) FROM catalogue_state`

    const emptyRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ empty: Schema.Boolean }),
      execute: () => sql`SELECT NOT EXISTS (SELECT 1 FROM catalogue_items) AS empty`
    })
    /** Whether no item is stored at all. */
    const isEmpty = Effect.map(emptyRows(undefined), (rows) => rows[0]?.empty === true)

    /**
     * Logs the removal of up to `limit` queued reservations (the oldest first), in one statement:
     * it takes them from the queue (rows another process is taking are skipped), appends them to
     * the log under the head's lock and wakes the engines at commit. Returns how many it logged.
     */
    const logReservations = (limit: number) =>
      sql`
        WITH taken AS (
          DELETE FROM catalogue_reservations WHERE item_id IN (
            SELECT item_id FROM catalogue_reservations ORDER BY reserved_at, item_id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING item_id, reserved_at),
        numbered AS (
          SELECT item_id, row_number() OVER (ORDER BY reserved_at, item_id) AS n, count(*) OVER () AS total FROM taken),
        head AS (
          UPDATE catalogue_state SET head_seq = head_seq + (SELECT count(*) FROM taken)
          WHERE EXISTS (SELECT 1 FROM taken) RETURNING epoch, head_seq),
        logged AS (
          INSERT INTO catalogue_changes (seq, epoch, op, item_id, item)
          SELECT head.head_seq - numbered.total + numbered.n, head.epoch, 'remove', numbered.item_id, NULL FROM head, numbered)
        SELECT (SELECT count(*) FROM taken) AS logged, (SELECT pg_notify(${CHANGES_CHANNEL}, head_seq::text) FROM head) AS notified`.pipe(
        loggedRows,
        Effect.map(loggedCount)
      )

    /** The stored items of these ids (lower case), each with the MD5 of its JSON, of its sim hints, and its status. */
    const digests = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: Schema.Struct({ id: Schema.String, digest: Schema.String }),
      execute: (ids) =>
        sql`
          SELECT id, md5(item) || md5(coalesce(sim, '')) || status AS digest
          FROM catalogue_items WHERE id = ANY(${ids}::uuid[])`
    })

    const activeSupplierRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: Schema.String }),
      execute: () => sql`SELECT id FROM catalogue_items WHERE status = 'active' AND source = 'supplier'`
    })
    /** Ids of the supplier's active items. */
    const activeSupplierIds = Effect.map(activeSupplierRows(undefined), (rows) => rows.map((r) => r.id))

    return {
      withTransaction: sql.withTransaction,
      upsertArrays,
      upsertItems,
      removeItems,
      notifyHead,
      isEmpty,
      logReservations,
      digests,
      activeSupplierIds
    } as const
  })
}) {}
