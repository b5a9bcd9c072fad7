/**
 * The catalogue at the change log's head, read for the engine's index in one consistent snapshot:
 * either whole from the items table (`readItems`), or as the index it has plus the log after its
 * cursor (`replayLog`), taking the upserts this process wrote from memory. The second is how the
 * process that ran a new database's first reconciliation loads its result: reading the items back
 * sent every text again, to be parsed and checked (about a second at 100,000 items). The
 * statements are CatalogueRepo's (Repo.ts).
 */
import { Effect } from "effect"
import { CatalogItem } from "../Domain/CatalogItem.js"
import { guardOf } from "../Domain/Guard.js"
import { type Entry, entryOf, type IndexedItem, Interner } from "./Entry.js"
import { CatalogueRepo, LOAD_PAGE } from "./Repo.js"

/** Log rows read at a time by a replay (without their texts: about 60 bytes each). */
const REPLAY_PAGE = 50_000

const isCatalogItem = guardOf(CatalogItem)

/** A stored item's JSON. It was checked when written, so one that is not a CatalogItem is a damaged database: a defect. */
export const storedItem = (text: string, id: string): CatalogItem => {
  const item: unknown = JSON.parse(text)
  if (!isCatalogItem(item)) throw new Error(`catalogue item ${id} in the database is not a CatalogItem`)
  return item
}

/** A logged upsert's entry: its price is the item's, in cents, as the items table stores it. */
export const loggedEntry = (item: IndexedItem, text: string, interner: Interner): Entry => entryOf(item, Math.round(item.price * 100), text, interner)

/** An upsert this process logged, as the entry it makes (its item need not be kept). */
export interface Remembered {
  readonly epoch: number
  readonly entry: Entry
}

/** The catalogue's state row: epoch, the log's head and pruned point, whether reconciled once. */
export const readState = Effect.flatMap(CatalogueRepo, (repo) => repo.readState)

/** Every active item at the log's head, as entries, and the state they are at. */
export const readItems = Effect.flatMap(CatalogueRepo, (repo) =>
  repo.inSnapshot(Effect.gen(function*() {
    const interner = new Interner()
    const entries: Array<Entry> = []
    const state = yield* repo.readState
    yield* repo.openItems
    for (;;) {
      const rows = yield* repo.fetchItems
      for (const row of rows) entries.push(entryOf(storedItem(row.item, row.id), Number(row.priceCents), row.item, interner))
      if (rows.length < LOAD_PAGE) break
      yield* Effect.yieldNow()
    }
    return { state, entries, interner }
  })))

/** Whether every seq after `cursor` through `head` is a remembered upsert of `epoch`. */
const rememberedAll = (remembered: ReadonlyMap<number, Remembered>, cursor: number, head: number, epoch: number) => {
  if (remembered.size < head - cursor) return false
  for (let seq = cursor + 1; seq <= head; seq++) {
    if (remembered.get(seq)?.epoch !== epoch) return false
  }
  return true
}

/**
 * The entries at the log's head: `entries` (the index at `cursor` of `epoch`) with every logged
 * change after `cursor` applied in order; an upsert found in `remembered` (by seq, for the same
 * item and epoch) is taken from there, any other's text is read from the log (nothing is read
 * when every change is remembered). None when the log does not continue from `cursor` (another
 * epoch, pruned past it, a gap): the caller reads the items. An id may be in the entries more than
 * once: the last is the current one (as `CatalogueIndex.bulk` takes them).
 */
export const replayLog = (options: {
  readonly epoch: number
  readonly cursor: number
  readonly entries: Iterable<Entry>
  readonly remembered: ReadonlyMap<number, Remembered>
  readonly interner: Interner
}) =>
  Effect.flatMap(CatalogueRepo, (repo) =>
    repo.inSnapshot(Effect.gen(function*() {
      const { cursor, epoch, interner, remembered } = options
      const state = yield* repo.readState
      if (state.epoch !== epoch || state.prunedThrough > cursor || state.head < cursor) return undefined
      if (rememberedAll(remembered, cursor, state.head, epoch)) {
        // each change after the cursor is an upsert this process logged (seqs are unique): nothing to
        // read (reading a million log rows back waited 5 s on PostgreSQL)
        const entries = Array.from(options.entries)
        for (let seq = cursor + 1; seq <= state.head; seq++) entries.push(remembered.get(seq)!.entry)
        return { state, entries }
      }
      const byId = new Map<string, Entry>()
      for (const entry of options.entries) byId.set(entry.id, entry)
      let at = cursor
      while (at < state.head) {
        const rows = yield* repo.logBetween(at, state.head, REPLAY_PAGE)
        if (rows.length === 0) return undefined
        const changes = rows.map((row) => {
          const seq = Number(row.seq)
          const mine = row.op === "upsert" ? remembered.get(seq) : undefined
          return {
            seq,
            epoch: row.epoch,
            op: row.op,
            itemId: row.itemId,
            entry: mine?.epoch === row.epoch && mine.entry.id === row.itemId ? mine.entry : undefined
          }
        })
        // the texts of the upserts another process or path wrote
        const unknown = changes.filter((c) => c.op === "upsert" && c.entry === undefined).map((c) => c.seq)
        const texts = new Map<number, string>()
        if (unknown.length > 0) {
          for (const row of yield* repo.logTexts(unknown)) texts.set(Number(row.seq), row.item)
        }
        for (const change of changes) {
          if (change.seq !== at + 1 || change.epoch !== epoch) return undefined
          at = change.seq
          if (change.op === "remove") {
            byId.delete(change.itemId)
            continue
          }
          const text = texts.get(change.seq)
          const entry = change.entry ?? (text === undefined ? undefined : loggedEntry(storedItem(text, change.itemId), text, interner))
          if (entry === undefined) return undefined
          byId.set(change.itemId, entry)
        }
        yield* Effect.yieldNow()
      }
      return { state, entries: Array.from(byId.values()) }
    })))
