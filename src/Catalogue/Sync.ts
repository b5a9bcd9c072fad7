/**
 * Supplier sync: exactly one leader across all processes (a PostgreSQL advisory lock held on a
 * reserved connection) reconciles the supplier's snapshot with the items table, then applies the
 * supplier's changes as they come, all through the change log. Followers wait for the lock.
 */
import { Chunk, Effect, Layer, Option, Stream } from "effect"
import { Settings } from "../Config.js"
import { Fibers } from "../Ops/Fibers.js"
import { collectStartupGarbage } from "../Ops/Heap.js"
import { Readiness } from "../Ops/Readiness.js"
import { Supplier } from "../Providers/Supplier.js"
import { ChangeLog } from "./ChangeLog.js"
import { CatalogueEngine } from "./Engine.js"
import { NewItems } from "./NewItems.js"
import { CatalogueRepo } from "./Repo.js"

const FOLLOWER_RETRY = "2 seconds"
const LOCK_CHECK = "5 seconds"
const CHANGE_BATCH = 500
const CHANGE_WINDOW = "50 millis"
/**
 * How often the change log is pruned: a tenth of the retention, between 1 s and 1 minute, so that
 * a cursor is refused as expired soon after its changes are past the retention, however short.
 */
const pruneIntervalMs = (retentionHours: number) => Math.min(60_000, Math.max(1_000, (retentionHours * 3_600_000) / 10))

/** How often a long reconciliation logs its progress. */
const PROGRESS_EVERY_MS = 5_000

export const SyncLive = Layer.scopedDiscard(Effect.gen(function*() {
  const repo = yield* CatalogueRepo
  const settings = yield* Settings
  const fibers = yield* Fibers
  const supplier = yield* Supplier
  const changeLog = yield* ChangeLog
  const newItems = yield* NewItems
  const readiness = yield* Readiness
  const engine = yield* CatalogueEngine

  /** Makes the items table match the supplier's snapshot (only what differs is written). */
  const reconcile = Effect.gen(function*() {
    // the ids sent, to remove what the supplier no longer lists (an empty catalogue has nothing to remove)
    const seen = new Set<string>()
    let listings = 0
    let logged = 0
    const total = yield* supplier.size
    const started = Date.now()
    let reportedAt = started
    // a new database's first reconciliation writes only new items: in bulk (NewItems)
    const empty = yield* changeLog.isEmpty
    yield* supplier.snapshot.pipe(
      // Each page becomes its write (into an empty catalogue its COPY rows, else the listings that
      // differ from what is stored), made while PostgreSQL writes the page before: the process and
      // the database work at once instead of in turn.
      Stream.mapEffect((page) =>
        empty
          ? Effect.map(newItems.prepareNew(page), (prepared) => ({ page, write: newItems.writeNew(prepared) }))
          : Effect.map(changeLog.differing(page), (changed) => ({
            page,
            write: changeLog.applyLogged(changed.map((listing) => ({ op: "upsert" as const, listing })))
          }))
      ),
      Stream.buffer({ capacity: 2 }),
      // Two new pages are written at once, each in its own transaction: one's items are copied while
      // the other logs its changes (an item's COPY takes no lock another page waits for). Other
      // writes go one at a time, each compared with what the one before left.
      Stream.mapEffect(({ page, write }) => Effect.map(write, (written) => ({ page, written })), { concurrency: empty ? 2 : 1 }),
      Stream.runForEach(({ page, written }) =>
        Effect.gen(function*() {
          listings += page.length
          if (!empty) { for (const listing of page) seen.add(listing.item.id.toLowerCase()) }
          logged += written.count
          // the engine here loads the reconciliation's result from them (CatalogueEngine.loadFromLog)
          engine.rememberWritten(written.upserts)
          // a large catalogue takes a while: its progress, every few seconds
          const now = Date.now()
          if (now - reportedAt >= PROGRESS_EVERY_MS) {
            reportedAt = now
            yield* Effect.logInfo("reconciling the catalogue with the supplier").pipe(Effect.annotateLogs({
              listings,
              of: total,
              percent: total > 0 ? Math.min(100, Math.floor((listings / total) * 100)) : 100,
              per_second: Math.round(listings / ((now - started) / 1000))
            }))
          }
        })
      )
    )
    const gone = empty ? [] : (yield* changeLog.activeSupplierIds).filter((id) => !seen.has(id))
    for (let i = 0; i < gone.length; i += 2_000) {
      logged += yield* changeLog.apply(gone.slice(i, i + 2_000).map((id) => ({ op: "remove" as const, id })))
    }
    // a first reconciliation's garbage is collected with the load that follows it here (the engine's)
    const engineLoadsNext = !engine.isSynced()
    // every process's engine wakes: the first reconciliation's end is when it loads the catalogue
    yield* repo.markReconciled
    yield* Effect.logInfo("catalogue reconciled with the supplier").pipe(Effect.annotateLogs({ listings, changes: logged }))
    if (!engineLoadsNext) yield* collectStartupGarbage("catalogue reconciled")
  })

  /** Deletes changes older than the retention and records how far the log is pruned. */
  const prune = repo.pruneLog(settings.feedRetentionHours * 3600)

  const lead = (beat: Effect.Effect<void>) =>
    Effect.gen(function*() {
      // after start-up's own work: the API listens and this process's index is loaded
      yield* readiness.awaitServing
      yield* engine.awaitLoaded
      yield* reconcile
      yield* beat
      const applyChanges = supplier.changes.pipe(
        Stream.groupedWithin(CHANGE_BATCH, CHANGE_WINDOW),
        Stream.runForEach((batch) => Effect.zipRight(changeLog.apply(Chunk.toReadonlyArray(batch)), beat))
      )
      const pruneForever = Effect.forever(Effect.zipRight(prune, Effect.sleep(pruneIntervalMs(settings.feedRetentionHours))))
      yield* Effect.all([applyChanges, pruneForever], { concurrency: 2, discard: true })
    })

  /** Holds the advisory lock on a reserved connection while leading; checks the connection lives. */
  const leadWhenElected = (beat: Effect.Effect<void>) =>
    Effect.scoped(Effect.gen(function*() {
      const connection = yield* repo.leaderConnection
      for (;;) {
        if (yield* connection.tryLock) break
        yield* beat
        yield* Effect.sleep(FOLLOWER_RETRY)
      }
      yield* Effect.logInfo("supplier sync: this process leads")
      const keepLock = Effect.forever(Effect.zipRight(Effect.sleep(LOCK_CHECK), connection.check))
      yield* Effect.raceFirst(lead(beat), keepLock)
    }))

  // The embedded database belongs to one process, which is then always the leader.
  const embedded = Option.isNone(settings.databaseUrl)
  yield* fibers.supervise("catalogue-sync", (beat) => embedded ? lead(beat) : leadWhenElected(beat))
})).pipe(Layer.provide(CatalogueRepo.Default))
