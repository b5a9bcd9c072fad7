/**
 * The only writer of the catalogue: every change goes to the items table and to the change log in
 * one transaction, under the current epoch, with a gapless sequence (the feed cursor). The row
 * lock on catalogue_state orders writers, so sequences commit in order; pg_notify wakes every
 * process's engine at commit. A purchase's reservation is queued by the buy and logged just after
 * (`reservationSteps`, `logReservations`).
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { createHash } from "node:crypto"
import { type CatalogItem, serialise } from "../Domain/CatalogItem.js"
import { Int8, rowsOf } from "../Domain/Db.js"
import type { SupplierListing } from "../Providers/Supplier.js"
import type { IndexedItem } from "./Entry.js"

export const CHANGES_CHANNEL = "catalogue_changes"

export type CatalogueWrite =
  | { readonly op: "upsert"; readonly listing: SupplierListing }
  | { readonly op: "remove"; readonly id: string }

export type Source = "supplier" | "admin"

/** An upsert this process logged: where in the log, and the item and text it wrote there. */
export interface LoggedUpsert {
  readonly seq: number
  readonly epoch: number
  /** What the index keeps of the item (the whole item, or only that: `NewItems`). */
  readonly item: IndexedItem
  readonly text: string
}

/** What a write logged: how many changes, and its upserts (the engine may take them from memory). */
export interface Logged {
  readonly count: number
  readonly upserts: ReadonlyArray<LoggedUpsert>
}

const BATCH = 2_000

const md5 = (text: string) => createHash("md5").update(text, "utf8").digest("hex")

const idRows = rowsOf(Schema.Struct({ id: Schema.String }))
const digestRows = rowsOf(Schema.Struct({ id: Schema.String, digest: Schema.String }))
const loggedRows = rowsOf(Schema.Struct({ logged: Int8 }))
const loggedChangeRows = rowsOf(Schema.Struct({ seq: Int8, epoch: Schema.Number, id: Schema.String }))
const emptyRows = rowsOf(Schema.Struct({ empty: Schema.Boolean }))

/** Ids in PostgreSQL's text form (lower case), whatever case a source wrote them in. */
export const normalised = (write: CatalogueWrite): CatalogueWrite =>
  write.op === "remove"
    ? { op: "remove", id: write.id.toLowerCase() }
    : write.listing.item.id === write.listing.item.id.toLowerCase()
    ? write
    : { op: "upsert", listing: { ...write.listing, item: { ...write.listing.item, id: write.listing.item.id.toLowerCase() } } }

/** Runs of consecutive writes of one kind, each id once per run (its last write wins). */
export const runsOf = (writes: ReadonlyArray<CatalogueWrite>) => {
  const runs: Array<{ op: "upsert" | "remove"; writes: Array<CatalogueWrite> }> = []
  for (const write of writes) {
    const last = runs[runs.length - 1]
    if (last !== undefined && last.op === write.op && last.writes.length < BATCH) last.writes.push(write)
    else runs.push({ op: write.op, writes: [write] })
  }
  return runs.map((run) => {
    const byId = new Map<string, CatalogueWrite>()
    for (const w of run.writes) byId.set(w.op === "upsert" ? w.listing.item.id : w.id, w)
    return { op: run.op, writes: Array.from(byId.values()) }
  })
}

export class ChangeLog extends Effect.Service<ChangeLog>()("ChangeLog", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * An item's stored JSON, made once per item object: a reconciliation compares it (`differing`)
     * and then writes it (`apply`), and a first sync of 100,000 items spent a second making it twice.
     */
    const texts = new WeakMap<CatalogItem, string>()
    const textOf = (item: CatalogItem) => {
      let text = texts.get(item)
      if (text === undefined) {
        text = serialise(item)
        texts.set(item, text)
      }
      return text
    }

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

    const loggedCount = (rows: ReadonlyArray<{ readonly logged: number }>) => rows[0]?.logged ?? 0

    const upsertRun = (writes: ReadonlyArray<CatalogueWrite>, source: Source) => {
      const rows = writes.flatMap((w) =>
        w.op === "upsert" ?
          [{
            id: w.listing.item.id,
            market_hash_name: w.listing.item.market_hash_name,
            price_cents: Math.round(w.listing.item.price * 100),
            provider_price_cents: w.listing.providerPriceCents,
            status: "active",
            item: textOf(w.listing.item),
            sim: w.listing.sim === undefined ? null : JSON.stringify(w.listing.sim),
            source
          }] :
          []
      )
      return sql`
        WITH written AS (
          INSERT INTO catalogue_items ${sql.insert(rows)}
          ${upsertConflict}),
        ${logWritten("upsert")}
        SELECT seq, epoch, item_id AS id FROM logged`.pipe(
        loggedChangeRows,
        Effect.map((logged): Logged => {
          const listingOf = new Map(writes.flatMap((w) => w.op === "upsert" ? [[w.listing.item.id, w.listing.item] as const] : []))
          return {
            count: logged.length,
            upserts: logged.flatMap(({ epoch, id, seq }) => {
              const item = listingOf.get(id)
              return item === undefined ? [] : [{ seq, epoch, item, text: textOf(item) }]
            })
          }
        })
      )
    }

    const removeRun = (writes: ReadonlyArray<CatalogueWrite>) =>
      sql`
        WITH written AS (
          UPDATE catalogue_items SET status = 'removed', updated_at = now()
          WHERE id IN ${sql.in(writes.flatMap((w) => w.op === "remove" ? [w.id] : []))} AND status = 'active'
          RETURNING id, NULL::text AS item),
        ${logWritten("remove")}
        SELECT count(*) AS logged FROM logged`.pipe(loggedRows, Effect.map(loggedCount))

    /**
     * Applies supplier or admin writes in one transaction: what actually changed is logged, in
     * order, and every engine is woken at commit. Answers what it logged.
     */
    const applyLogged = (writes: ReadonlyArray<CatalogueWrite>, source: Source = "supplier") =>
      sql.withTransaction(Effect.gen(function*() {
        let count = 0
        const upserts: Array<LoggedUpsert> = []
        for (const run of runsOf(writes.map(normalised))) {
          if (run.op === "remove") {
            count += yield* removeRun(run.writes)
            continue
          }
          const logged = yield* upsertRun(run.writes, source)
          count += logged.count
          upserts.push(...logged.upserts)
        }
        if (count > 0) yield* sql`SELECT pg_notify(${CHANGES_CHANNEL}, head_seq::text) FROM catalogue_state`
        return { count, upserts }
      })).pipe(Effect.withSpan("ChangeLog.apply"))

    /** `applyLogged`, answering the number of logged changes. */
    const apply = (writes: ReadonlyArray<CatalogueWrite>, source: Source = "supplier") => Effect.map(applyLogged(writes, source), (logged) => logged.count)

    /** Whether no item is stored at all (a new database's catalogue, before its first reconciliation). */
    const isEmpty = sql`SELECT NOT EXISTS (SELECT 1 FROM catalogue_items) AS empty`.pipe(
      emptyRows,
      Effect.map((rows) => rows[0]?.empty === true)
    )

    /**
     * Takes an active item out of the live catalogue for a purchase, as steps of the caller's
     * statement (WITH ...), done only if `when` holds: the CTE `reserved` is the item if it was
     * active. Its removal is not logged here but queued in catalogue_reservations, so the buy takes
     * no lock that other merchants' buys wait for; `logReservations` logs it after the commit.
     */
    const reservationSteps = (itemId: string, when: Statement.Fragment) =>
      sql`
      reserved AS (
        UPDATE catalogue_items SET status = 'reserved', updated_at = now()
        WHERE id = ${itemId} AND status = 'active' AND ${when} RETURNING id),
      queued AS (
        INSERT INTO catalogue_reservations (item_id) SELECT id FROM reserved)`

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
        Effect.map((rows) => rows[0]?.logged ?? 0),
        Effect.withSpan("ChangeLog.logReservations")
      )

    /**
     * The listings that would change the catalogue: new, not active, or with another item JSON or
     * sim hints than stored (compared by MD5, so a reconciliation of an unchanged catalogue sends
     * ids and digests, not every item again). Reserved items are left to `apply`, which skips them.
     */
    const differing = (listings: ReadonlyArray<SupplierListing>) =>
      Effect.gen(function*() {
        if (listings.length === 0) return listings
        const stored = yield* digestRows(sql`
          SELECT id, md5(item) || md5(coalesce(sim, '')) || status AS digest
          FROM catalogue_items WHERE id = ANY(${listings.map((l) => l.item.id.toLowerCase())}::uuid[])`)
        const digests = new Map(stored.map((row) => [row.id, row.digest]))
        const changed = listings.filter((l) => {
          // a listing not stored yet differs (a first sync compares nothing)
          const digest = digests.get(l.item.id.toLowerCase())
          return digest === undefined || digest !== md5(textOf(l.item)) + md5(l.sim === undefined ? "" : JSON.stringify(l.sim)) + "active"
        })
        // their texts are made now, ahead of `apply`, which a reconciliation runs while the next page is compared
        for (const listing of changed) textOf(listing.item)
        return changed
      })

    /** Ids of the supplier's active items (reconciliation against a snapshot). */
    const activeSupplierIds = sql`SELECT id FROM catalogue_items WHERE status = 'active' AND source = 'supplier'`.pipe(
      idRows,
      Effect.map((rows) => rows.map((r) => r.id))
    )

    return {
      apply,
      applyLogged,
      upsertArrays,
      textOf,
      isEmpty,
      reservationSteps,
      logReservations,
      differing,
      activeSupplierIds
    } as const
  })
}) {}
