/**
 * The bulk write of new listings on PGlite (NewItems.prepareNew and writeNew: the upserts as one
 * statement of arrays in binary, a new database's first reconciliation) against the change log's
 * upserts (ChangeLog.applyLogged), each on its own copy of the migrated PGlite template, whatever
 * DATABASE_URL says. Both write the same rows to the items table and the same changes to the log,
 * gapless from the head; a page with stored listings writes and logs only what changed.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { ChangeLog, type Logged } from "../../src/Catalogue/ChangeLog.js"
import { NewItems } from "../../src/Catalogue/NewItems.js"
import type { SupplierListing } from "../../src/Providers/Supplier.js"
import { listingsWithTrickyNames } from "../support/listings.js"
import { pgliteCopyLayer } from "../support/pglite.js"

const listings = listingsWithTrickyNames(12, 1_200)

const insertNew = (page: ReadonlyArray<SupplierListing>) => Effect.flatMap(NewItems, (newItems) => Effect.flatMap(newItems.prepareNew(page), newItems.writeNew))
const upsert = (page: ReadonlyArray<SupplierListing>) => Effect.flatMap(ChangeLog, (log) => log.applyLogged(page.map((listing) => ({ op: "upsert", listing }))))

describe("the bulk write of new listings on PGlite", () => {
  const runtimes: Array<ManagedRuntime.ManagedRuntime<NewItems | ChangeLog | SqlClient.SqlClient, unknown>> = []
  afterAll(async () => {
    for (const runtime of runtimes) await runtime.dispose()
  })

  /** A copy of the migrated template with the change log and NewItems on it. */
  const database = async () => {
    const runtime = ManagedRuntime.make(NewItems.Default.pipe(Layer.provideMerge(ChangeLog.Default), Layer.provideMerge(pgliteCopyLayer("pglite-newitems-"))))
    runtimes.push(runtime)
    const run = <A>(effect: Effect.Effect<A, unknown, NewItems | ChangeLog | SqlClient.SqlClient>) => runtime.runPromise(effect)
    const query = <A extends object>(text: string) => run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)))
    // which statements wrote the items table: the arrays (unnest) or the upserts' VALUES
    await query(`CREATE TABLE item_writes (n serial, arrays boolean);
      CREATE FUNCTION record_item_write() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO item_writes (arrays) VALUES (position('unnest(' in current_query()) > 0); RETURN NULL; END $$;
      CREATE TRIGGER record_item_write AFTER INSERT ON catalogue_items FOR EACH STATEMENT EXECUTE FUNCTION record_item_write()`)
    return {
      run,
      writes: async () => (await query<{ arrays: boolean }>("SELECT arrays FROM item_writes ORDER BY n")).map((r) => r.arrays ? "arrays" : "values"),
      items: () => query("SELECT id, market_hash_name, price_cents, provider_price_cents, status, item, sim, source FROM catalogue_items ORDER BY id"),
      changes: () => query("SELECT op, item_id, item FROM catalogue_changes ORDER BY item_id, seq"),
      seqs: async () => (await query<{ seq: string }>("SELECT seq FROM catalogue_changes ORDER BY seq")).map((r) => Number(r.seq)),
      head: async () => Number((await query<{ head_seq: string }>("SELECT head_seq FROM catalogue_state"))[0]!.head_seq),
      upsertsLogged: async () =>
        (await query<{ seq: string; item_id: string; item: string }>("SELECT seq, item_id, item FROM catalogue_changes WHERE op = 'upsert' ORDER BY seq"))
          .map((r) => ({ seq: Number(r.seq), id: r.item_id, text: r.item }))
    }
  }

  const reported = (logged: ReadonlyArray<Logged>) =>
    logged.flatMap((l) => l.upserts).map((u) => ({ seq: u.seq, id: u.item.id, text: u.text })).sort((a, b) => a.seq - b.seq)

  it("writes exactly the rows and changes the upserts write, gapless from the head, as arrays", async () => {
    const [bulk, upserts] = [await database(), await database()]
    const pages = [listings.slice(0, 500), listings.slice(500, 1_000), listings.slice(1_000)]
    const [bulkLogged, upsertsLogged]: [Array<Logged>, Array<Logged>] = [[], []]
    for (const page of pages) {
      bulkLogged.push(await bulk.run(insertNew(page)))
      upsertsLogged.push(await upserts.run(upsert(page)))
    }
    expect(bulkLogged.map((l) => l.count)).toEqual(pages.map((page) => page.length))
    expect(reported(bulkLogged)).toEqual(await bulk.upsertsLogged())
    const written = await bulk.items()
    expect(written).toHaveLength(listings.length)
    expect(written).toEqual(await upserts.items())
    expect(await bulk.changes()).toEqual(await upserts.changes())
    expect(await bulk.seqs()).toEqual(Array.from({ length: listings.length }, (_, i) => i + 1))
    expect(await bulk.head()).toBe(listings.length)
    expect(await bulk.writes()).toEqual(["arrays", "arrays", "arrays"])
    expect(await upserts.writes()).toEqual(["values", "values", "values"])
  })

  it("a page with stored listings writes and logs only what changed, as the upserts do", async () => {
    const [bulk, upserts] = [await database(), await database()]
    const first = listings.slice(0, 300)
    // 80 stored unchanged, 20 stored and repriced, 200 new
    const repriced = first.slice(200, 220).map((listing) => ({ ...listing, item: { ...listing.item, price: listing.item.price + 1 } }))
    const page = [...first.slice(220, 300), ...repriced, ...listings.slice(300, 500)]
    const bulkLogged = [await bulk.run(insertNew(first)), await bulk.run(insertNew(page))]
    const upsertsLogged = [await upserts.run(upsert(first)), await upserts.run(upsert(page))]
    expect(bulkLogged.map((l) => l.count)).toEqual([300, 220])
    expect(reported(bulkLogged)).toEqual(reported(upsertsLogged))
    expect(reported(bulkLogged)).toEqual(await bulk.upsertsLogged())
    expect(await bulk.items()).toEqual(await upserts.items())
    expect(await bulk.seqs()).toEqual(Array.from({ length: 520 }, (_, i) => i + 1))
    expect(await bulk.writes()).toEqual(["arrays", "arrays"])
    // a page with nothing new logs nothing, and the head stays
    expect(await bulk.run(insertNew(first.slice(220, 300)))).toEqual({ count: 0, upserts: [] })
    expect(await bulk.head()).toBe(520)
  })

  it("pages written at once (as a first reconciliation writes two) log gaplessly, each change its page's item", async () => {
    const log = await database()
    const pages = [listings.slice(0, 400), listings.slice(400, 800), listings.slice(800)]
    const written = await log.run(Effect.all(pages.map(insertNew), { concurrency: 3 }))
    expect(written.map((w) => w.count)).toEqual(pages.map((page) => page.length))
    expect(reported(written)).toEqual(await log.upsertsLogged())
    expect(await log.seqs()).toEqual(Array.from({ length: listings.length }, (_, i) => i + 1))
  })
})
