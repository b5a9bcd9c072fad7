/**
 * The only writer of the catalogue: every change goes to the items table and to the change log in
 * one transaction, under the current epoch, with a gapless sequence (the feed cursor). The row
 * lock on catalogue_state orders writers, so sequences commit in order; pg_notify wakes every
 * process's engine at commit. A purchase's reservation is queued by the buy and logged just after
 * (`reservationSteps`, `logReservations`).
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import { type CatalogItem, serialise } from "../Domain/CatalogItem.js"
import { Int8, rowsOf } from "../Domain/Db.js"
import type { SupplierListing } from "../Providers/Supplier.js"

export const CHANGES_CHANNEL = "catalogue_changes"

export type CatalogueWrite =
  | { readonly op: "upsert"; readonly listing: SupplierListing }
  | { readonly op: "remove"; readonly id: string }

export type Source = "supplier" | "admin"

const BATCH = 2_000

interface Effective {
  readonly op: "upsert" | "remove"
  readonly id: string
  readonly item: string | null
}

const md5 = (text: string) => createHash("md5").update(text, "utf8").digest("hex")

const HeadRow = Schema.Struct({ epoch: Schema.Number, head: Int8 })
const idRows = rowsOf(Schema.Struct({ id: Schema.String }))
const digestRows = rowsOf(Schema.Struct({ id: Schema.String, digest: Schema.String }))
const loggedRows = rowsOf(Schema.Struct({ logged: Int8 }))

/** Ids in PostgreSQL's text form (lower case), whatever case a source wrote them in. */
const normalised = (write: CatalogueWrite): CatalogueWrite =>
  write.op === "remove"
    ? { op: "remove", id: write.id.toLowerCase() }
    : write.listing.item.id === write.listing.item.id.toLowerCase()
    ? write
    : { op: "upsert", listing: { ...write.listing, item: { ...write.listing.item, id: write.listing.item.id.toLowerCase() } } }

/** Runs of consecutive writes of one kind, each id once per run (its last write wins). */
const runsOf = (writes: ReadonlyArray<CatalogueWrite>) => {
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

    /** Appends the effective changes to the log, in order, in the current transaction. */
    const append = (changes: ReadonlyArray<Effective>) =>
      Effect.gen(function*() {
        if (changes.length === 0) return Option.none<number>()
        const rows = yield* sql`UPDATE catalogue_state SET head_seq = head_seq + ${changes.length} RETURNING epoch, head_seq AS head`
        const { epoch, head } = Schema.decodeUnknownSync(HeadRow)(rows[0])
        const first = head - changes.length + 1
        for (let offset = 0; offset < changes.length; offset += BATCH) {
          const slice = changes.slice(offset, offset + BATCH).map((c, i) => ({
            seq: first + offset + i,
            epoch,
            op: c.op,
            item_id: c.id,
            item: c.item
          }))
          yield* sql`INSERT INTO catalogue_changes ${sql.insert(slice)}`
        }
        yield* sql`SELECT pg_notify(${CHANGES_CHANNEL}, ${String(head)})`
        return Option.some(head)
      })

    const upsertRun = (writes: ReadonlyArray<CatalogueWrite>, source: Source) =>
      Effect.gen(function*() {
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
        // Unchanged items and items reserved by a purchase are left alone and not logged.
        const changed = yield* idRows(sql`
          INSERT INTO catalogue_items ${sql.insert(rows)}
          ON CONFLICT (id) DO UPDATE SET market_hash_name = EXCLUDED.market_hash_name, price_cents = EXCLUDED.price_cents,
            provider_price_cents = EXCLUDED.provider_price_cents, status = 'active', item = EXCLUDED.item,
            sim = EXCLUDED.sim, source = EXCLUDED.source, updated_at = now()
          WHERE catalogue_items.status <> 'reserved'
            AND (catalogue_items.status <> 'active' OR catalogue_items.item <> EXCLUDED.item
                 OR catalogue_items.sim IS DISTINCT FROM EXCLUDED.sim)
          RETURNING id`)
        // the item as written (not sent back: a catalogue's first sync would read it all again)
        const written = new Set(changed.map((r) => r.id))
        return rows.flatMap((r) => written.has(r.id) ? [{ op: "upsert" as const, id: r.id, item: r.item }] : [])
      })

    const removeRun = (writes: ReadonlyArray<CatalogueWrite>) =>
      Effect.gen(function*() {
        const ids = writes.flatMap((w) => w.op === "remove" ? [w.id] : [])
        const removed = yield* idRows(sql`
          UPDATE catalogue_items SET status = 'removed', updated_at = now()
          WHERE id IN ${sql.in(ids)} AND status = 'active' RETURNING id`)
        const set = new Set(removed.map((r) => r.id))
        return ids.flatMap((id) => set.has(id) ? [{ op: "remove" as const, id, item: null }] : [])
      })

    /**
     * Applies supplier or admin writes in one transaction: what actually changed is logged, in
     * order. Returns the number of logged changes.
     */
    const apply = (writes: ReadonlyArray<CatalogueWrite>, source: Source = "supplier") =>
      sql.withTransaction(Effect.gen(function*() {
        const effective: Array<Effective> = []
        for (const run of runsOf(writes.map(normalised))) {
          effective.push(...(run.op === "upsert" ? yield* upsertRun(run.writes, source) : yield* removeRun(run.writes)))
        }
        yield* append(effective)
        return effective.length
      })).pipe(Effect.withSpan("ChangeLog.apply"))

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
        return listings.filter((l) => {
          // a listing not stored yet differs (a first sync compares nothing)
          const digest = digests.get(l.item.id.toLowerCase())
          return digest === undefined || digest !== md5(textOf(l.item)) + md5(l.sim === undefined ? "" : JSON.stringify(l.sim)) + "active"
        })
      })

    /** Ids of the supplier's active items (reconciliation against a snapshot). */
    const activeSupplierIds = sql`SELECT id FROM catalogue_items WHERE status = 'active' AND source = 'supplier'`.pipe(
      idRows,
      Effect.map((rows) => rows.map((r) => r.id))
    )

    return { apply, reservationSteps, logReservations, differing, activeSupplierIds } as const
  })
}) {}
