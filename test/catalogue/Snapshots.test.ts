/**
 * The catalogue read back at the log's head two ways (Catalogue/Snapshots.ts): whole from the
 * items table (`readItems`), and as an index plus the log after its cursor (`replayLog`), where the
 * upserts this process logged come from memory. Both give the same entries, whatever else was
 * written between (another writer's upserts, removals, an item written twice); a remembered entry
 * is used as it is, and only when it is the logged item of that epoch. A log that does not
 * continue from the cursor (another epoch, pruned past it) gives nothing: the caller reads the items.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type CatalogueWrite, ChangeLog, type LoggedUpsert } from "../../src/Catalogue/ChangeLog.js"
import { type Entry, Interner } from "../../src/Catalogue/Entry.js"
import { CatalogueRepo } from "../../src/Catalogue/Repo.js"
import { loggedEntry, readItems, readState, type Remembered, replayLog } from "../../src/Catalogue/Snapshots.js"
import { syntheticListing } from "../../src/Providers/Simulator/Listings.js"
import { inProcess } from "../support/in-process.js"

const SnapshotsTest = inProcess(Layer.merge(ChangeLog.Default, CatalogueRepo.Default))

const upserts = (seed: number, from: number, count: number): Array<CatalogueWrite> =>
  Array.from({ length: count }, (_, i) => ({ op: "upsert", listing: syntheticListing(seed, from + i) }))

/** Entries by id, as plain values (what a reader of the index sees). */
const byId = (entries: Iterable<Entry>) => new Map(Array.from(entries, (e) => [e.id, { ...e }]))

const remember = (into: Map<number, Remembered>, interner: Interner, logged: ReadonlyArray<LoggedUpsert>) => {
  for (const { epoch, item, seq, text } of logged) into.set(seq, { epoch, entry: loggedEntry(item, text, interner) })
}

layer(SnapshotsTest, { timeout: 60_000, excludeTestServices: true })("the catalogue at the log's head", (it) => {
  it.effect("the log over what this process wrote gives the items table's entries, its own upserts from memory", () =>
    Effect.gen(function*() {
      const changeLog = yield* ChangeLog
      const start = yield* readState
      const before = yield* readItems
      const remembered = new Map<number, Remembered>()
      const interner = new Interner()

      const first = yield* changeLog.applyLogged(upserts(41, 0, 300))
      expect(first.count).toBe(300)
      expect(first.upserts.map((u) => u.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => start.head + 1 + i))
      remember(remembered, interner, first.upserts)
      // another writer's items (not remembered), a removal, and an item written again at a new price
      yield* changeLog.apply(upserts(42, 0, 20), "admin")
      yield* changeLog.apply([{ op: "remove", id: first.upserts[0]!.item.id }])
      const again = syntheticListing(41, 7)
      const repriced = yield* changeLog.applyLogged([{ op: "upsert", listing: { ...again, item: { ...again.item, price: 1234.56 } } }])
      expect(repriced.count).toBe(1)
      remember(remembered, interner, repriced.upserts)

      const replayed = yield* replayLog({ epoch: start.epoch, cursor: before.state.head, entries: before.entries, remembered, interner })
      const items = yield* readItems
      expect(replayed).toBeDefined()
      expect(replayed!.state.head).toBe(items.state.head)
      expect(byId(replayed!.entries)).toEqual(byId(items.entries))
      expect(byId(replayed!.entries).get(again.item.id)?.price).toBe(123456)
      // the remembered entries are the ones used; the other writer's were read from the log
      const mine = new Set(Array.from(remembered.values(), (r) => r.entry))
      const used = replayed!.entries.filter((e) => mine.has(e))
      expect(used.length).toBe(299)
      expect(replayed!.entries.length).toBe(before.entries.length + 299 + 20)
    }))

  it.effect("when every change after the cursor is remembered, the log is not read: the remembered entries are the result", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const changeLog = yield* ChangeLog
      const before = yield* readItems
      const remembered = new Map<number, Remembered>()
      const interner = new Interner()
      remember(remembered, interner, (yield* changeLog.applyLogged(upserts(46, 0, 50))).upserts)
      // the second write lists one of the first's items again, at another price
      const again = syntheticListing(46, 0)
      const second = [...upserts(46, 50, 49), { op: "upsert" as const, listing: { ...again, item: { ...again.item, price: 4321.5 } } }]
      remember(remembered, interner, (yield* changeLog.applyLogged(second)).upserts)
      const options = { epoch: before.state.epoch, cursor: before.state.head, entries: before.entries, interner }
      // the log's rows made unusable: a replay that read them would not take the remembered entries
      yield* sql`UPDATE catalogue_changes SET item_id = gen_random_uuid() WHERE seq > ${before.state.head}`
      const replayed = yield* replayLog({ ...options, remembered })
      const mine = Array.from(remembered.values(), (r) => r.entry)
      expect(replayed!.entries.filter((e) => mine.includes(e))).toHaveLength(100)
      const current = byId(replayed!.entries)
      expect(current.size).toBe(before.entries.length + 99)
      expect(current.get(again.item.id)?.price).toBe(432150)
      // one change not remembered: the log is read, and its rows no longer match what was remembered
      remembered.delete(before.state.head + 1)
      const read = yield* replayLog({ ...options, remembered })
      expect(read!.entries.filter((e) => mine.includes(e))).toHaveLength(0)
    }))

  it.effect("a remembered entry of another item or epoch is not used: the log's text is", () =>
    Effect.gen(function*() {
      const changeLog = yield* ChangeLog
      const before = yield* readItems
      const interner = new Interner()
      const logged = yield* changeLog.applyLogged(upserts(43, 0, 3))
      const [a, b] = logged.upserts
      const stranger = loggedEntry(syntheticListing(44, 0).item, "{}", interner)
      const remembered = new Map<number, Remembered>([
        [a!.seq, { epoch: a!.epoch, entry: stranger }],
        [b!.seq, { epoch: b!.epoch + 1, entry: loggedEntry(b!.item, b!.text, interner) }]
      ])
      const replayed = yield* replayLog({ epoch: before.state.epoch, cursor: before.state.head, entries: before.entries, remembered, interner })
      expect(replayed!.entries).not.toContain(stranger)
      expect(replayed!.entries.some((e) => remembered.get(b!.seq)!.entry === e)).toBe(false)
      expect(byId(replayed!.entries)).toEqual(byId((yield* readItems).entries))
    }))

  it.effect("a log that does not continue from the cursor gives nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const changeLog = yield* ChangeLog
      const before = yield* readItems
      yield* changeLog.apply(upserts(45, 0, 5))
      const options = { cursor: before.state.head, entries: before.entries, remembered: new Map(), interner: new Interner() }
      expect(yield* replayLog({ ...options, epoch: before.state.epoch + 1 })).toBeUndefined()
      expect(yield* replayLog({ ...options, epoch: before.state.epoch })).toBeDefined()
      yield* sql`UPDATE catalogue_state SET pruned_through = ${before.state.head + 1}`
      expect(yield* replayLog({ ...options, epoch: before.state.epoch })).toBeUndefined()
    }))
})
