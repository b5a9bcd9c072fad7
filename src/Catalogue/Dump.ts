/**
 * The full dump (spec 2.7, 4.2): rebuilt by a supervised fiber every DUMP_INTERVAL_SECONDS from the
 * engine's snapshot (the index's id-prefix buckets, copied by reference), whose epoch and cursor
 * are taken with it. The JSON is assembled in pieces (runs of buckets) from each item's ready
 * bytes, written into the shared input of a deflate worker (DeflateWorkers.ts); each piece ends on a
 * sync flush, so the pieces join into one valid gzip member (as pigz does) with a CRC-32 combined
 * from the pieces'. A piece whose buckets did not change since the last build is copied from the
 * last file. The event loop only compares buckets and copies bytes, a piece at a time.
 *
 * The pieces themselves (how items are split, how they join into one gzip member) are DumpPieces.ts.
 */
import { Clock, Deferred, Effect, Fiber, Option } from "effect"
import { join } from "node:path"
import { pipeline, type Readable } from "node:stream"
import * as zlib from "node:zlib"
import { Settings } from "../Config.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { crc32Combine } from "./Crc32.js"
import { makeDeflateSlots } from "./DeflateWorkers.js"
import { dumpDirectory, type DumpFile, openDumpFile, type Source } from "./DumpFile.js"
import { DEFLATE_END, GZIP_HEADER, GZIP_LEVEL, itemBytes, prefixBits, sameBuckets, smallPieceOf, type StoredPiece, trailer, writeItems } from "./DumpPieces.js"
import { CatalogueEngine } from "./Engine.js"
import type { Entry } from "./Entry.js"
import { yieldToEventLoop } from "./EventLoop.js"
import { BUCKET_BITS } from "./Index.js"

/**
 * Deflate workers: two on two cores. With three deflations at once (on libuv's pool then), a full
 * rebuild at 2.5M took 34 s instead of 41 but the event loop waited longer for a CPU (delay 321 ms
 * against 236).
 */
const DEFLATE_WORKERS = 2
/** Pieces in flight: two per worker, so a worker has its next piece while its last is written out. */
const PIECE_SLOTS = 4
/** Smallest buffer a piece's JSON is written into (a piece is about 1.5 MB). */
const PIECE_BUFFER_BYTES = 2 * 1024 * 1024

export interface BuiltDump {
  readonly generatedAt: Date
  readonly itemsCount: number
  /** Present only when the engine stayed in one epoch during generation. */
  readonly checkpoint: Option.Option<{ readonly epoch: number; readonly cursor: number }>
  readonly etag: string
  /** One gzip member. */
  readonly file: DumpFile
  /** The same bytes in memory, when they are at most DUMP_MEMORY_MAX_MB. */
  readonly gzipBytes: Option.Option<Buffer>
  readonly gzipLength: number
  readonly jsonLength: number
  readonly buildMillis: number
}

/**
 * How long a download waits for the first dump of a start (the catalogue's reconciliation and the
 * build): a few seconds at 100,000 items, tens at millions; past it, 503 FEED_NOT_READY as before.
 */
const FIRST_BUILD_WAIT = "30 seconds"

export class CatalogueDump extends Effect.Service<CatalogueDump>()("CatalogueDump", {
  scoped: Effect.gen(function*() {
    const engine = yield* CatalogueEngine
    const settings = yield* Settings
    const fibers = yield* Fibers
    const metrics = yield* Metrics
    let current: BuiltDump | undefined
    const firstBuilt = yield* Deferred.make<void>()
    let downloads = 0

    /** The last build's buckets and pieces (by index), and how many prefix bits chose them. */
    let cache: {
      bits: number
      buckets: ReadonlyArray<ReadonlyArray<Entry>>
      pieces: ReadonlyArray<StoredPiece | undefined>
    } = { bits: -1, buckets: [], pieces: [] }
    const comma = smallPieceOf(Buffer.from(","))
    // Pieces are written into the slots' reused buffers, so a build leaves the GC no strings or
    // buffers of item JSON (gigabytes at millions of items, which would trigger long full collections).
    const slots = yield* makeDeflateSlots({ slots: PIECE_SLOTS, workers: DEFLATE_WORKERS, level: GZIP_LEVEL, initialBytes: PIECE_BUFFER_BYTES })
    const directory = yield* dumpDirectory(settings.dataDir)
    let builds = 0
    let unfinished: DumpFile | undefined
    let replaced: DumpFile | undefined

    /**
     * Builds the dump. A piece is the items of a run of id-prefix buckets; a piece whose buckets
     * are the same arrays as in the last build is copied from the last file, the others are
     * written from the items' ready JSON and deflated by the workers. The pieces join into one
     * gzip member with commas between them and a CRC-32 combined from theirs, written to a new file.
     */
    const build = Effect.gen(function*() {
      const started = yield* Clock.currentTimeMillis
      const snapshot = engine.snapshot()
      const generatedAt = new Date(started)
      const bits = prefixBits(snapshot.size)
      const bucketsPerPiece = 2 ** (BUCKET_BITS - bits)
      const previous = cache.bits === bits ? cache : undefined
      const head = smallPieceOf(Buffer.from(`{"generated_at":"${generatedAt.toISOString()}","items_count":${snapshot.size},"items":[`))
      const tail = smallPieceOf(Buffer.from("]}"))
      // Written in order as pieces are ready, one piece per slot in flight meanwhile, so a
      // build holds a few pieces in memory, not the whole dump.
      const file = yield* openDumpFile(join(directory, `dump-${++builds}.gz`))
      unfinished = file.file
      const stored: Array<StoredPiece | undefined> = new Array(2 ** bits)
      let crc = 0
      let jsonLength = 0
      let pieceCount = 0
      let reused = 0
      const add = (part: { readonly crc: number; readonly length: number }) => {
        crc = crc32Combine(crc, part.crc, part.length)
        jsonLength += part.length
      }
      yield* file.append(GZIP_HEADER)
      yield* file.append(head.deflated)
      add(head)
      /** Appends one piece (after a comma unless it is the first) and records where it went. */
      const place = (g: number, part: { readonly crc: number; readonly length: number }, bytes: Source) =>
        Effect.gen(function*() {
          if (pieceCount++ > 0) {
            yield* file.append(comma.deflated)
            add(comma)
          }
          const { offset, size } = yield* file.append(bytes)
          add(part)
          stored[g] = { file: file.file, offset, size, crc: part.crc, length: part.length }
        })
      const pending: Array<Effect.Effect<void, Error>> = []
      let deflating = 0
      let deflations = 0
      const drainOne = Effect.suspend(() => pending.shift() ?? Effect.void)
      for (let g = 0; g < stored.length; g++) {
        const from = g * bucketsPerPiece
        const to = from + bucketsPerPiece
        const before = previous?.pieces[g]
        if (before !== undefined && sameBuckets(snapshot.buckets, previous!.buckets, from, to)) {
          reused++
          pending.push(place(g, before, { from: before.file, offset: before.offset, size: before.size }))
          continue
        }
        const { count, bytes } = itemBytes(snapshot.buckets, from, to)
        if (count === 0) continue
        // write out everything up to the oldest deflation while every slot is busy: pending runs
        // in order, so the slot taken next (in turn) has been written out
        while (deflating >= slots.length) yield* drainOne
        const slot = slots[deflations++ % slots.length]!
        const input = slot.input(bytes)
        const deflation = yield* Effect.fork(slot.deflate(writeItems(input, snapshot.buckets, from, to)))
        deflating++
        pending.push(Effect.flatMap(Fiber.join(deflation), (fresh) => {
          deflating--
          return place(g, fresh, fresh.deflated)
        }))
        yield* yieldToEventLoop
      }
      while (pending.length > 0) yield* drainOne
      add(tail)
      yield* file.append(tail.deflated)
      yield* file.append(DEFLATE_END)
      yield* file.append(trailer(crc, jsonLength))
      // Kept in memory up to DUMP_MEMORY_MAX_MB (the default, 64, is about 250,000 items) and served
      // from there: read from its file, each download allocated its chunks again, and at 100,000
      // items the garbage collections that this external memory started cost several times the
      // CPU of sending the bytes (issue 26's dump benchmark). A larger dump is read from its file.
      const gzipBytes = file.size() <= settings.dumpMemoryMaxMb * 1024 * 1024 ? Option.some(yield* file.readAll) : Option.none()
      cache = { bits, buckets: snapshot.buckets, pieces: stored }
      const sameEpoch = engine.epoch() === snapshot.epoch
      const built: BuiltDump = {
        generatedAt,
        itemsCount: snapshot.size,
        checkpoint: sameEpoch ? Option.some({ epoch: snapshot.epoch, cursor: snapshot.cursor }) : Option.none(),
        etag: sameEpoch
          ? `W/"${snapshot.epoch}-${snapshot.cursor}-${snapshot.size}"`
          : `W/"t${started}-${snapshot.size}"`,
        file: file.file,
        gzipBytes,
        gzipLength: file.size(),
        jsonLength,
        buildMillis: (yield* Clock.currentTimeMillis) - started
      }
      // The file of two builds ago goes: a dump read from `current` just before this build stays
      // whole for a download that takes its slot a moment later.
      replaced?.retire()
      replaced = current?.file
      current = built
      unfinished = undefined
      yield* Deferred.succeed(firstBuilt, undefined)
      yield* Effect.logInfo("catalogue dump built").pipe(Effect.annotateLogs({
        items: built.itemsCount,
        pieces: pieceCount,
        pieces_reused: reused,
        gzip_bytes: built.gzipLength,
        json_bytes: built.jsonLength,
        millis: built.buildMillis
      }))
      return built
    }).pipe(
      // a build that failed half-way leaves no file behind
      Effect.onError(() =>
        Effect.sync(() => {
          unfinished?.retire()
          unfinished = undefined
        })
      ),
      Effect.withSpan("CatalogueDump.build")
    )

    yield* fibers.supervise("catalogue-dump", (beat) =>
      Effect.zipRight(
        engine.awaitSynced,
        Effect.forever(Effect.gen(function*() {
          yield* build
          yield* beat
          yield* Effect.sleep(`${settings.dumpIntervalSeconds} seconds`)
        }))
      ))

    const ageGauge = metrics.gauge({ name: "catalogue_dump_age_seconds", help: "Seconds since the served dump was generated" })
    const downloadsGauge = metrics.gauge({ name: "catalogue_dump_downloads", help: "Dump downloads in progress" })
    yield* metrics.onScrape(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (current !== undefined) ageGauge.set((now - current.generatedAt.getTime()) / 1000)
      downloadsGauge.set(downloads)
    }))

    /**
     * Takes a download slot of `dump` (its file stays readable until the slot is released); None
     * when every slot is in use. The release gives the slot back once, however often it is called.
     */
    const acquireDownload = (dump: BuiltDump) =>
      Effect.sync((): Option.Option<() => void> => {
        if (downloads >= settings.dumpMaxConcurrentDownloads) return Option.none()
        downloads++
        dump.file.retain()
        let held = true
        return Option.some(() => {
          if (!held) return
          held = false
          downloads--
          dump.file.release()
        })
      })

    /**
     * The dump, or the first one once built: a download asked for just after start-up (/ready does
     * not wait for the first build) waits for it, up to FIRST_BUILD_WAIT; None if there is none then.
     */
    const awaitCurrent = Effect.suspend(() =>
      current !== undefined
        ? Effect.succeed(Option.some(current))
        : Effect.map(Effect.timeoutOption(Deferred.await(firstBuilt), FIRST_BUILD_WAIT), () => Option.fromNullable(current))
    )

    /** The gzip bytes as built. */
    const gzipStream = (dump: BuiltDump): Readable => dump.file.stream()

    /**
     * The JSON bytes, decompressed on the fly for clients that do not accept gzip (a failed read
     * fails the decompression, and a destroyed decompression closes the file).
     */
    const identityStream = (dump: BuiltDump): Readable => {
      const gunzip = zlib.createGunzip()
      pipeline(dump.file.stream(), gunzip, () => undefined)
      return gunzip
    }

    return {
      awaitCurrent,
      acquireDownload,
      gzipStream,
      identityStream
    } as const
  }),
  dependencies: [CatalogueEngine.Default, Fibers.Default, Metrics.Default]
}) {}
