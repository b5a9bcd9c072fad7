/**
 * The bulk write of new listings (NewItems.prepareNew and writeNew: COPY, a new database's first
 * reconciliation) against the change log's upserts (ChangeLog.apply), on a real PostgreSQL server
 * (DATABASE_URL only: on PGlite they are apply). Both write the same rows to the items table and the same
 * changes to the log, gapless from the head; a listing that is stored after all makes the write
 * fall back to the upserts, which write only what changed (the page's items made again from their
 * texts). Pages written at once log gaplessly; pages written in turn take the same buffers again.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { ChangeLog, type Logged } from "../../src/Catalogue/ChangeLog.js"
import { NewItems } from "../../src/Catalogue/NewItems.js"
import { directTransaction, DirectTransactions } from "../../src/Db/Database.js"
import { migrate } from "../../src/Db/Migrations.js"
import type { SupplierListing } from "../../src/Providers/Supplier.js"
import { type FreshDatabase, freshDatabase, serverPool } from "../support/database.js"
import { listingsWithTrickyNames, TRICKY_NAMES } from "../support/listings.js"

const listings = listingsWithTrickyNames(11, 1_200)

/** A page written as a first reconciliation writes it: prepared, then written. */
const insertNew = (newItems: NewItems, page: ReadonlyArray<SupplierListing>) => Effect.flatMap(newItems.prepareNew(page), newItems.writeNew)

describe.runIf(!!process.env["DATABASE_URL"])("the change log's bulk write of new listings (DATABASE_URL only)", () => {
  const opened: Array<{ readonly database: FreshDatabase; readonly pool: pg.Pool }> = []
  afterAll(async () => {
    for (const { database, pool } of opened) {
      await pool.end()
      await database.drop()
    }
  })

  /** A fresh, migrated database, and the change log on it (with the pool's direct transactions, as the service has them). */
  const changeLogOn = async () => {
    const database = await freshDatabase()
    const pool = serverPool(database.url, 2)
    opened.push({ database, pool })
    const sql = Layer.provideMerge(Layer.effectDiscard(migrate), PgClient.layer({ url: Redacted.make(database.url!) }))
    const layer = NewItems.Default.pipe(
      Layer.provideMerge(ChangeLog.Default),
      Layer.provideMerge(Layer.mergeAll(sql, Layer.succeed(DirectTransactions, Option.some(directTransaction(pool))))),
      Layer.provide(Reactivity.layer)
    )
    const run = <A>(use: (log: ChangeLog, newItems: NewItems) => Effect.Effect<A, unknown>) =>
      Effect.runPromise(Effect.scoped(Effect.flatMap(Effect.all([ChangeLog, NewItems]), ([log, newItems]) => use(log, newItems)).pipe(Effect.provide(layer))))
    // migrated (each run builds the layer again: its migrations are then applied already)
    await run(() => Effect.void)
    // which statements write the items table (COPY, or the upserts' INSERT), as PostgreSQL ran them
    await pool.query(`CREATE TABLE item_writes (n serial, statement text);
      CREATE FUNCTION record_item_write() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO item_writes (statement) VALUES ((regexp_match(current_query(), '^\\s*(\\w+)'))[1]); RETURN NULL; END $$;
      CREATE TRIGGER record_item_write AFTER INSERT ON catalogue_items FOR EACH STATEMENT EXECUTE FUNCTION record_item_write();`)
    const writes = async () => (await pool.query<{ statement: string }>("SELECT statement FROM item_writes ORDER BY n")).rows.map((r) => r.statement)
    const items = async () =>
      (await pool.query("SELECT id, market_hash_name, price_cents, provider_price_cents, status, item, sim, source FROM catalogue_items ORDER BY id")).rows
    /** The log without its epoch (each database draws its own), and its head. */
    const changes = async () => ({
      rows: (await pool.query("SELECT op, item_id, item FROM catalogue_changes ORDER BY item_id, seq")).rows,
      seqs: (await pool.query<{ seq: string }>("SELECT seq FROM catalogue_changes ORDER BY seq")).rows.map((r) => Number(r.seq)),
      head: Number((await pool.query<{ head_seq: string }>("SELECT head_seq FROM catalogue_state")).rows[0]!.head_seq)
    })
    /** The logged upserts as (seq, item id, text), in order: what a write reports it logged must be these. */
    const upsertsLogged = async () =>
      (await pool.query<{ seq: string; item_id: string; item: string }>("SELECT seq, item_id, item FROM catalogue_changes WHERE op = 'upsert' ORDER BY seq"))
        .rows.map((r) => ({ seq: Number(r.seq), id: r.item_id, text: r.item }))
    return { run, items, changes, writes, upsertsLogged }
  }

  /** What writes reported as logged, in the log's order. */
  const reported = (logged: ReadonlyArray<Logged>) =>
    logged.flatMap((l) => l.upserts).map((u) => ({ seq: u.seq, id: u.item.id, text: u.text })).sort((a, b) => a.seq - b.seq)

  it("writes exactly the rows and changes the upserts write, gapless from the head", async () => {
    const [bulk, upserts] = [await changeLogOn(), await changeLogOn()]
    const pages = [listings.slice(0, 500), listings.slice(500, 1_000), listings.slice(1_000)]
    const [bulkLogged, upsertsLogged]: [Array<Logged>, Array<Logged>] = [[], []]
    for (const page of pages) {
      bulkLogged.push(await bulk.run((_, newItems) => insertNew(newItems, page)))
      upsertsLogged.push(await upserts.run((log) => log.applyLogged(page.map((listing) => ({ op: "upsert", listing })))))
    }
    expect(bulkLogged.map((l) => l.count)).toEqual(pages.map((page) => page.length))
    expect(upsertsLogged.map((l) => l.count)).toEqual(pages.map((page) => page.length))
    // each reports the seq, item and text it logged
    expect(reported(bulkLogged)).toEqual(await bulk.upsertsLogged())
    expect(reported(upsertsLogged)).toEqual(await upserts.upsertsLogged())
    const written = await bulk.items()
    expect(written).toHaveLength(listings.length)
    expect(written).toEqual(await upserts.items())
    // the listings given names COPY must escape are stored with them (the generator makes such names too)
    const storedNames = new Map(written.map((row) => [row.id, row.market_hash_name]))
    const tricky = listings.slice(0, TRICKY_NAMES.length * 2)
    expect(tricky.map((l) => storedNames.get(l.item.id))).toEqual(tricky.map((l) => l.item.market_hash_name))
    expect(new Set(tricky.map((l) => l.item.market_hash_name))).toEqual(new Set(TRICKY_NAMES))
    const logged = await bulk.changes()
    expect(logged.rows).toEqual((await upserts.changes()).rows)
    expect(logged.seqs).toEqual(Array.from({ length: listings.length }, (_, i) => i + 1))
    expect(logged.head).toBe(listings.length)
    expect(await bulk.writes()).toEqual(["COPY", "COPY", "COPY"])
    expect(await upserts.writes()).toEqual(["WITH", "WITH", "WITH"])
  })

  it("falls back to the upserts when a listing is stored after all: only what changed is written and logged", async () => {
    const log = await changeLogOn()
    const first = listings.slice(0, 300)
    const firstLogged = await log.run((_, newItems) => insertNew(newItems, first))
    expect(firstLogged.count).toBe(300)
    // a page with 100 stored listings (20 of them repriced) and 200 new ones
    const repriced = first.slice(200, 220).map((listing) => ({ ...listing, item: { ...listing.item, price: listing.item.price + 1 } }))
    const page = [...first.slice(220, 300), ...repriced, ...listings.slice(300, 500)]
    const pageLogged = await log.run((_, newItems) => insertNew(newItems, page))
    expect(pageLogged.count).toBe(220)
    expect(reported([firstLogged, pageLogged])).toEqual(await log.upsertsLogged())
    const logged = await log.changes()
    expect(logged.seqs).toEqual(Array.from({ length: 520 }, (_, i) => i + 1))
    expect(logged.head).toBe(520)
    const stored = new Map((await log.items()).map((row) => [row.id, row]))
    expect(stored.size).toBe(500)
    for (const listing of repriced) expect(stored.get(listing.item.id)?.price_cents).toBe(String(Math.round(listing.item.price * 100)))
    // the second page's COPY failed and was rolled back: its rows came from the upserts
    expect(await log.writes()).toEqual(["COPY", "WITH"])
  })

  it("a page that falls back writes what the upserts write: names COPY escapes, sim hints and prices as listed", async () => {
    const [bulk, upserts] = [await changeLogOn(), await changeLogOn()]
    const stored = listings.slice(20, 30)
    // one stored listing, repriced, makes the COPY fail: the page is the upserts of what it prepared
    const page = [{ ...stored[0]!, item: { ...stored[0]!.item, price: stored[0]!.item.price + 3 } }, ...listings.slice(0, 20)]
    await bulk.run((_, newItems) => insertNew(newItems, stored))
    await upserts.run((log) => log.applyLogged(stored.map((listing) => ({ op: "upsert", listing }))))
    const bulkLogged = await bulk.run((_, newItems) => insertNew(newItems, page))
    const upsertsLogged = await upserts.run((log) => log.applyLogged(page.map((listing) => ({ op: "upsert", listing }))))
    expect(bulkLogged.count).toBe(21)
    expect(reported([bulkLogged])).toEqual(reported([upsertsLogged]))
    const items = await bulk.items()
    expect(items).toEqual(await upserts.items())
    expect(items.filter((row) => row.sim !== null)).toHaveLength(TRICKY_NAMES.length)
    expect((await bulk.changes()).rows).toEqual((await upserts.changes()).rows)
    expect(await bulk.writes()).toEqual(["COPY", "WITH"])
  })

  it("pages written one after another through one service reuse its COPY buffers, and every row is as the upserts write it", async () => {
    const [bulk, upserts] = [await changeLogOn(), await changeLogOn()]
    // smaller, larger, smaller again, then larger than any: buffers given back are taken again
    const pages = [listings.slice(0, 100), listings.slice(100, 400), listings.slice(400, 450), listings.slice(450)]
    const bulkLogged = await bulk.run((_, newItems) => Effect.forEach(pages, (page) => insertNew(newItems, page)))
    for (const page of pages) await upserts.run((log) => log.applyLogged(page.map((listing) => ({ op: "upsert", listing }))))
    expect(bulkLogged.map((l) => l.count)).toEqual(pages.map((page) => page.length))
    expect(reported(bulkLogged)).toEqual(await bulk.upsertsLogged())
    expect(await bulk.items()).toEqual(await upserts.items())
    expect((await bulk.changes()).rows).toEqual((await upserts.changes()).rows)
    expect(await bulk.writes()).toEqual(["COPY", "COPY", "COPY", "COPY"])
  })

  it("pages written at once (as a first reconciliation writes two) log gaplessly, each change its page's item", async () => {
    const log = await changeLogOn()
    const pages = [listings.slice(0, 400), listings.slice(400, 800), listings.slice(800)]
    const written = await log.run((_, newItems) => Effect.all(pages.map((page) => insertNew(newItems, page)), { concurrency: 3 }))
    expect(written.map((w) => w.count)).toEqual(pages.map((page) => page.length))
    expect(reported(written)).toEqual(await log.upsertsLogged())
    const logged = await log.changes()
    expect(logged.seqs).toEqual(Array.from({ length: listings.length }, (_, i) => i + 1))
    expect((await log.items()).map((row) => row.id).sort()).toEqual(listings.map((l) => l.item.id).sort())
    expect(await log.writes()).toEqual(["COPY", "COPY", "COPY"])
  })

  it("pages written at once that share an item: one falls back to the upserts, and the log still agrees with the items", async () => {
    const log = await changeLogOn()
    const shared = listings[10]!
    const pages = [listings.slice(0, 300), [{ ...shared, item: { ...shared.item, price: shared.item.price + 2 } }, ...listings.slice(300, 600)]]
    const written = await log.run((_, newItems) => Effect.all(pages.map((page) => insertNew(newItems, page)), { concurrency: 2 }))
    expect(reported(written)).toEqual(await log.upsertsLogged())
    const logged = await log.changes()
    expect(logged.seqs).toEqual(Array.from({ length: logged.head }, (_, i) => i + 1))
    // the item is stored once, as the last logged change of it has it
    const items = await log.items()
    expect(items).toHaveLength(600)
    const last = (await log.upsertsLogged()).filter((u) => u.id === shared.item.id).at(-1)
    expect(items.find((row) => row.id === shared.item.id)?.item).toBe(last?.text)
    expect((await log.writes()).sort()).toEqual(["COPY", "WITH"])
  })
})
