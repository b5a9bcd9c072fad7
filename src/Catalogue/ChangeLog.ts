/**
 * The only writer of the catalogue: every change goes to the items table and to the change log in
 * one transaction, under the current epoch, with a gapless sequence (the feed cursor). The row
 * lock on catalogue_state orders writers, so sequences commit in order; pg_notify wakes every
 * process's engine at commit (the statements: ChangeLogRepo.ts). A purchase's reservation is
 * queued by the buy's statement (Purchases/BuyStatements.ts) and logged just after
 * (`logReservations`).
 */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { type CatalogItem, serialise } from "../Domain/CatalogItem.js"
import type { SupplierListing } from "../Providers/Supplier.js"
import { ChangeLogRepo, type ItemWrite } from "./ChangeLogRepo.js"
import type { IndexedItem } from "./Entry.js"

// the engine's and the new items' repositories take the channel's name from here
export { CHANGES_CHANNEL } from "./ChangeLogRepo.js"

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
    const repo = yield* ChangeLogRepo

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

    const upsertRun = (writes: ReadonlyArray<CatalogueWrite>, source: Source) => {
      const rows = writes.flatMap((w): Array<ItemWrite> =>
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
      return repo.upsertItems(rows).pipe(
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

    const removeRun = (writes: ReadonlyArray<CatalogueWrite>) => repo.removeItems(writes.flatMap((w) => w.op === "remove" ? [w.id] : []))

    /**
     * Applies supplier or admin writes in one transaction: what actually changed is logged, in
     * order, and every engine is woken at commit. Answers what it logged.
     */
    const applyLogged = (writes: ReadonlyArray<CatalogueWrite>, source: Source = "supplier") =>
      repo.withTransaction(Effect.gen(function*() {
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
        if (count > 0) yield* repo.notifyHead
        return { count, upserts }
      })).pipe(Effect.withSpan("ChangeLog.apply"))

    /** `applyLogged`, answering the number of logged changes. */
    const apply = (writes: ReadonlyArray<CatalogueWrite>, source: Source = "supplier") => Effect.map(applyLogged(writes, source), (logged) => logged.count)

    /**
     * Logs the removal of up to `limit` queued reservations (the oldest first), in one statement,
     * and wakes the engines at commit. Returns how many it logged.
     */
    const logReservations = (limit: number) => repo.logReservations(limit).pipe(Effect.withSpan("ChangeLog.logReservations"))

    /**
     * The listings that would change the catalogue: new, not active, or with another item JSON or
     * sim hints than stored (compared by MD5, so a reconciliation of an unchanged catalogue sends
     * ids and digests, not every item again). Reserved items are left to `apply`, which skips them.
     */
    const differing = (listings: ReadonlyArray<SupplierListing>) =>
      Effect.gen(function*() {
        if (listings.length === 0) return listings
        const stored = yield* repo.digests(listings.map((l) => l.item.id.toLowerCase()))
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

    return {
      apply,
      applyLogged,
      /** The upserts as one compiled statement of arrays, for PGlite's binary parameters (ChangeLogRepo.upsertArrays). */
      upsertArrays: repo.upsertArrays,
      textOf,
      /** Whether no item is stored at all (a new database's catalogue, before its first reconciliation). */
      isEmpty: repo.isEmpty,
      logReservations,
      differing,
      /** Ids of the supplier's active items (reconciliation against a snapshot). */
      activeSupplierIds: repo.activeSupplierIds
    } as const
  }),
  dependencies: [ChangeLogRepo.Default]
}) {}
