/**
 * The catalogue engine, on every process: loads the live index at start, then tails the change
 * log by sequence (woken by pg_notify, with a slow poll as a safety net), so every process holds
 * the same index at the same cursor. Listeners (the realtime feed) get each applied batch.
 */
import { Deferred, Effect, Option, Queue, Stream } from "effect"
import { Fibers } from "../Ops/Fibers.js"
import { collectStartupGarbage } from "../Ops/Heap.js"
import { Metrics } from "../Ops/Metrics.js"
import { Readiness } from "../Ops/Readiness.js"
import type { LoggedUpsert } from "./ChangeLog.js"
import { type Entry, Interner } from "./Entry.js"
import { forEachInSlices } from "./EventLoop.js"
import { CatalogueIndex, type ListFilters, type Page, type SortOrder } from "./Index.js"
import { CatalogueRepo, type ChangeRow, type StateRow } from "./Repo.js"
import { loggedEntry, readItems, type Remembered, replayLog, storedItem } from "./Snapshots.js"
import type { Keyed } from "./SortedList.js"

/** One change as the feed sends it: `{"op":"upsert","item":...}` or `{"op":"remove","id":...}`. */
export interface LoggedChange {
  readonly seq: number
  readonly json: string
}

export type EngineEvent =
  | { readonly _tag: "changes"; readonly epoch: number; readonly from: number; readonly to: number; readonly changes: ReadonlyArray<LoggedChange> }
  | { readonly _tag: "reset"; readonly epoch: number }
  /** The index was loaded whole past changes it did not publish: live clients behind `cursor` resume from the log. */
  | { readonly _tag: "advanced"; readonly epoch: number; readonly cursor: number }

export interface Snapshot {
  readonly epoch: number
  readonly cursor: number
  readonly size: number
  /** Every entry, in buckets by id prefix (CatalogueIndex.snapshotBuckets). */
  readonly buckets: ReadonlyArray<ReadonlyArray<Entry>>
}

/** Changes read from the log at a time; a large transaction (a reconcile) is read in several. */
const TAIL_BATCH = 200
/**
 * The longest the event loop applies changes without a break. A slice is applied whole (the
 * cursor moves with it) and published as one batch. 200 changes at a time held the event loop for
 * up to 80 ms at 2,500,000 items (about 400 µs a change), 500 for 74 ms at 1,000,000
 * (bench/catalogue, 2026-11); a small catalogue applies a whole read in one slice.
 */
const SLICE_MS = 10
/**
 * The tail is woken by pg_notify; this slow poll is only a safety net (a notification lost while
 * the LISTEN connection was down). Every poll is a query: at 1 s, the three idle polls of a process
 * (this, the reservations', the worker's) were half its CPU with nothing to do (measured 2026-11).
 */
const POLL_INTERVAL = "5 seconds"
/** Recent changes kept in memory for resuming clients; older ones are read from the log. */
const RING_SIZE = 50_000

const changeJson = (row: ChangeRow) => row.op === "upsert" ? `{"op":"upsert","item":${row.item}}` : `{"op":"remove","id":"${row.itemId}"}`

export class CatalogueEngine extends Effect.Service<CatalogueEngine>()("CatalogueEngine", {
  scoped: Effect.gen(function*() {
    const repo = yield* CatalogueRepo
    const fibers = yield* Fibers
    const metrics = yield* Metrics
    const readiness = yield* Readiness

    let index = new CatalogueIndex()
    let epoch = 0
    let cursor = 0
    let loaded = false
    /** Changes whenever the index does (a load, a batch of changes): what a cached page is of. */
    let version = 0
    const firstLoad = yield* Deferred.make<void>()
    /** Whether the supplier sync has reconciled the catalogue at least once (readiness, first dump). */
    let synced = false
    const firstSynced = yield* Deferred.make<void>()
    const listeners = new Set<(event: EngineEvent) => void>()
    const ring: Array<LoggedChange> = []

    /** The catalogue's reads (Snapshots.ts) on this engine's repository. */
    const withRepo = <A, E>(read: Effect.Effect<A, E, CatalogueRepo>) => Effect.provideService(read, CatalogueRepo, repo)
    const readState = repo.readState

    /**
     * Upserts this process logged before the first reconciliation ended (the supplier sync leads
     * here), by seq: the load at its end takes them from here (`replayLog`), not from the database.
     */
    let remembered = new Map<number, Remembered>()
    let rememberedInterner = new Interner()
    const rememberWritten = (upserts: ReadonlyArray<LoggedUpsert>) => {
      if (synced) return
      for (const { epoch, item, seq, text } of upserts) remembered.set(seq, { epoch, entry: loggedEntry(item, text, rememberedInterner) })
    }

    /** Makes `fresh` the index, at the state it was read at; tells the listeners what moved. */
    const install = (fresh: CatalogueIndex, state: StateRow, from: "items" | "log") =>
      Effect.gen(function*() {
        const changedEpoch = loaded && state.epoch !== epoch
        const advanced = loaded && !changedEpoch && state.head > cursor
        index = fresh
        version++
        epoch = state.epoch
        cursor = state.head
        ring.length = 0
        loaded = true
        yield* Effect.logInfo("catalogue loaded").pipe(Effect.annotateLogs({ items: fresh.size, epoch, cursor, from }))
        // A load of the reconciled catalogue (a start's, or a reload after an epoch change) leaves
        // several times the index's size in garbage (with a first reconciliation's); a load of
        // nothing (a new database's, before that reconciliation) leaves none. Collected before
        // `synced` lets /ready answer 200, so the pause falls before the process takes traffic.
        if (fresh.size > 0 && state.reconciled) yield* collectStartupGarbage("catalogue loaded")
        // the snapshot holds what the reconciliation wrote, if it had ended
        synced ||= state.reconciled
        yield* Deferred.succeed(firstLoad, undefined)
        if (synced) yield* Deferred.succeed(firstSynced, undefined)
        if (changedEpoch) publish({ _tag: "reset", epoch })
        else if (advanced) publish({ _tag: "advanced", epoch, cursor })
      })

    /** A consistent snapshot of the items at the log's head, read in pages, indexed at once. */
    const load = Effect.gen(function*() {
      remembered = new Map()
      const read = yield* withRepo(readItems)
      yield* install(CatalogueIndex.bulk(read.entries, read.interner), read.state, "items")
    }).pipe(Effect.withSpan("CatalogueEngine.load"))

    /** The index and the log after it, with what this process wrote from memory; else a `load`. */
    const loadFromLog = Effect.gen(function*() {
      const interner = rememberedInterner
      const read = yield* withRepo(replayLog({ epoch, cursor, entries: index.entries(), remembered, interner }))
      remembered = new Map()
      rememberedInterner = new Interner()
      if (read === undefined) return yield* load
      yield* install(CatalogueIndex.bulk(read.entries, interner), read.state, "log")
    }).pipe(Effect.withSpan("CatalogueEngine.loadFromLog"))

    const publish = (event: EngineEvent) => {
      for (const listener of listeners) {
        try {
          listener(event)
        } catch {
          // a listener's failure is its own (it closes its client); the others go on
        }
      }
    }

    // The tail fiber and `refresh` callers must not apply the same changes twice.
    const applying = yield* Effect.makeSemaphore(1)

    /**
     * Applies every logged change after the cursor; reloads on an epoch change or a pruned gap.
     * Until the supplier's first reconciliation has ended, the changes are the whole catalogue
     * being written: it is loaded whole once that has ended (bulk, as a restart loads it), not
     * applied change by change as it is written.
     */
    const catchUp = applying.withPermits(1)(Effect.gen(function*() {
      if (!loaded) yield* load
      if (!synced) {
        if (!(yield* readState).reconciled) return
        yield* remembered.size > 0 ? loadFromLog : load
      }
      for (;;) {
        const rows = yield* repo.changesAfter({ after: cursor, limit: TAIL_BATCH })
        if (rows.length === 0) {
          const state = yield* readState
          if (state.epoch !== epoch || state.head < cursor) yield* load
          return
        }
        if (rows[0]!.seq !== cursor + 1 || rows.some((r) => r.epoch !== epoch)) {
          yield* load
          continue
        }
        yield* forEachInSlices(rows, {
          sliceMs: SLICE_MS,
          apply: (row) => {
            if (row.op === "upsert") {
              index.upsert(loggedEntry(storedItem(row.item!, row.itemId), row.item!, index.interner))
            } else {
              index.remove(row.itemId)
            }
          },
          // the cursor, the version and the feed move with each slice: readers never see an index
          // ahead of or behind its cursor
          sliceDone: (from, to) => {
            const changes = rows.slice(from, to).map((row): LoggedChange => ({ seq: row.seq, json: changeJson(row) }))
            const first = cursor + 1
            cursor = changes[changes.length - 1]!.seq
            version++
            ring.push(...changes)
            if (ring.length > RING_SIZE) ring.splice(0, ring.length - RING_SIZE)
            publish({ _tag: "changes", epoch, from: first, to: cursor, changes })
          }
        })
        if (rows.length < TAIL_BATCH) return
      }
    }))

    // The index loads in the tail fiber, so the process listens (and answers /health) meanwhile;
    // /ready stays 503 and readers wait for the first load (`awaitLoaded`).
    const wake = yield* Queue.sliding<void>(1)
    // every notification wakes the tail, and so does (re)listening (Listen.ts: LISTENING), so what
    // was logged while no LISTEN was in force is read then
    yield* fibers.supervise(
      "catalogue-notifications",
      (beat) => repo.changeNotifications.pipe(Stream.runForEach(() => Effect.zipRight(beat, Queue.offer(wake, undefined))))
    )
    yield* fibers.supervise("catalogue-tail", (beat) =>
      Effect.forever(Effect.gen(function*() {
        yield* catchUp
        yield* beat
        yield* Queue.take(wake).pipe(Effect.timeoutOption(POLL_INTERVAL))
      })))

    yield* readiness.register("catalogue", Effect.sync(() => loaded && synced))
    const itemsGauge = metrics.gauge({ name: "catalogue_items", help: "Items in the live catalogue index" })
    const cursorGauge = metrics.gauge({ name: "catalogue_cursor", help: "Change-log sequence the index is at" })
    const epochGauge = metrics.gauge({ name: "catalogue_epoch", help: "Catalogue engine epoch" })
    yield* metrics.onScrape(Effect.sync(() => {
      itemsGauge.set(index.size)
      cursorGauge.set(cursor)
      epochGauge.set(epoch)
    }))

    /**
     * Logged changes after `after`, up to `limit`: from memory when recent, else from the log.
     * None when they are no longer in the log (retention) or the epoch moved on.
     */
    const changesAfter = (after: number, limit: number): Effect.Effect<Option.Option<ReadonlyArray<LoggedChange>>> =>
      Effect.gen(function*() {
        const first = ring[0]
        if (first !== undefined && after + 1 >= first.seq) {
          const start = after + 1 - first.seq
          return Option.some(ring.slice(start, start + limit))
        }
        const rows = yield* repo.changesAfter({ after, limit })
        if (rows.length > 0 && (rows[0]!.seq !== after + 1 || rows.some((r) => r.epoch !== epoch))) return Option.none()
        return Option.some(rows.map((row) => ({ seq: row.seq, json: changeJson(row) })))
      }).pipe(Effect.orDie)

    return {
      epoch: () => epoch,
      /** Whether the index is loaded: before, it is empty and readers must wait (`awaitLoaded`). */
      isLoaded: () => loaded,
      awaitLoaded: Deferred.await(firstLoad),
      /** Whether the index is loaded from a catalogue reconciled with the supplier at least once. */
      isSynced: () => loaded && synced,
      /** Waits until the index is loaded and the catalogue reflects the supplier once. */
      awaitSynced: Deferred.await(firstSynced),
      cursor: () => cursor,
      /** A number that changes whenever the index changes (answers built from it may be reused until then). */
      version: () => version,
      page: (filters: ListFilters, sort: SortOrder, after: Keyed | undefined, limit: number): Page => index.page(filters, sort, after, limit),
      /** The whole index at one cursor, taken synchronously (nothing can change it meanwhile). */
      snapshot: (): Snapshot => ({ epoch, cursor, size: index.size, buckets: index.snapshotBuckets() }),
      subscribe: (listener: (event: EngineEvent) => void) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            listeners.add(listener)
          }),
          () =>
            Effect.sync(() => {
              listeners.delete(listener)
            })
        ),
      changesAfter,
      /** The log's retention state, for validating a resume cursor. */
      logState: readState.pipe(Effect.orDie),
      /** Upserts this process logged (the supplier sync's first reconciliation): see `loadFromLog`. */
      rememberWritten,
      /** Catch up now (tests and the purchase path use it to read their own writes). */
      refresh: catchUp.pipe(Effect.orDie)
    } as const
  }),
  dependencies: [CatalogueRepo.Default, Fibers.Default, Metrics.Default, Readiness.Default]
}) {}
