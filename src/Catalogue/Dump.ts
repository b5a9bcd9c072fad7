/**
 * The full dump (spec 2.7, 4.2): rebuilt by a supervised fiber every DUMP_INTERVAL_SECONDS from the
 * engine's snapshot, whose epoch and cursor are taken with it. The JSON is assembled in pieces of
 * a few thousand items from each item's ready bytes; each piece is deflated on libuv's thread pool
 * and ends on a sync flush, so the pieces join into one valid gzip member (as pigz does) with a
 * running CRC-32. The event loop only joins strings and checksums a piece at a time.
 */
import { Clock, Effect, Fiber, Option } from "effect"
import { Readable } from "node:stream"
import * as zlib from "node:zlib"
import { Settings } from "../Config.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { Readiness } from "../Ops/Readiness.js"
import { CatalogueEngine } from "./Engine.js"

const PIECE_ITEMS = 2_000
/** Pieces deflated at once (thread pool threads on two cores). */
const PIECE_CONCURRENCY = 2
const GZIP_LEVEL = 1

export interface BuiltDump {
  readonly generatedAt: Date
  readonly itemsCount: number
  /** Present only when the engine stayed in one epoch during generation. */
  readonly checkpoint: Option.Option<{ readonly epoch: number; readonly cursor: number }>
  readonly etag: string
  /** One gzip member, in order. */
  readonly gzip: ReadonlyArray<Buffer>
  readonly gzipLength: number
  readonly jsonLength: number
  readonly buildMillis: number
}

const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff])
/** An empty final fixed-Huffman block: ends the deflate stream after the sync-flushed pieces. */
const DEFLATE_END = Buffer.from([0x03, 0x00])

const deflatePiece = (piece: Buffer) =>
  Effect.async<Buffer, Error>((resume) => {
    zlib.deflateRaw(piece, { level: GZIP_LEVEL, finishFlush: zlib.constants.Z_SYNC_FLUSH }, (error, out) =>
      resume(error ? Effect.fail(error) : Effect.succeed(out)))
  })

const trailer = (crc: number, length: number) => {
  const buffer = Buffer.alloc(8)
  buffer.writeUInt32LE(crc >>> 0, 0)
  buffer.writeUInt32LE(length % 0x1_0000_0000, 4)
  return buffer
}

export class CatalogueDump extends Effect.Service<CatalogueDump>()("CatalogueDump", {
  scoped: Effect.gen(function*() {
    const engine = yield* CatalogueEngine
    const settings = yield* Settings
    const fibers = yield* Fibers
    const metrics = yield* Metrics
    const readiness = yield* Readiness
    let current: BuiltDump | undefined
    let downloads = 0

    const build = Effect.gen(function*() {
      const started = yield* Clock.currentTimeMillis
      const snapshot = engine.snapshot()
      const generatedAt = new Date(started)
      const head = Buffer.from(`{"generated_at":"${generatedAt.toISOString()}","items_count":${snapshot.entries.length},"items":[`)
      const tail = Buffer.from("]}")
      let crc = zlib.crc32(head)
      let jsonLength = head.length
      const pieceCount = Math.ceil(snapshot.entries.length / PIECE_ITEMS)
      const deflated: Array<Buffer> = new Array(pieceCount)
      // Pieces are made and checksummed in order on this thread, one slice of work at a time, and
      // deflated on the thread pool, at most PIECE_CONCURRENCY at once: a piece's JSON is dropped as
      // soon as it is deflated, so the dump never holds the whole JSON.
      const inFlight: Array<Fiber.RuntimeFiber<void, Error>> = []
      for (let i = 0; i < pieceCount; i++) {
        const slice = snapshot.entries.slice(i * PIECE_ITEMS, (i + 1) * PIECE_ITEMS)
        let text = i === 0 ? "" : ","
        for (let j = 0; j < slice.length; j++) text += (j === 0 ? "" : ",") + slice[j]!.json
        const raw = Buffer.from(text)
        crc = zlib.crc32(raw, crc)
        jsonLength += raw.length
        if (inFlight.length >= PIECE_CONCURRENCY) yield* Fiber.join(inFlight.shift()!)
        inFlight.push(yield* Effect.fork(Effect.map(deflatePiece(raw), (out) => { deflated[i] = out })))
        yield* Effect.yieldNow()
      }
      yield* Fiber.joinAll(inFlight)
      crc = zlib.crc32(tail, crc)
      jsonLength += tail.length
      const [headDeflated, tailDeflated] = yield* Effect.all([deflatePiece(head), deflatePiece(tail)])
      const gzip = [GZIP_HEADER, headDeflated, ...deflated, tailDeflated, DEFLATE_END, trailer(crc, jsonLength)]
      const sameEpoch = engine.epoch() === snapshot.epoch
      const built: BuiltDump = {
        generatedAt,
        itemsCount: snapshot.entries.length,
        checkpoint: sameEpoch ? Option.some({ epoch: snapshot.epoch, cursor: snapshot.cursor }) : Option.none(),
        etag: sameEpoch
          ? `W/"${snapshot.epoch}-${snapshot.cursor}-${snapshot.entries.length}"`
          : `W/"t${started}-${snapshot.entries.length}"`,
        gzip,
        gzipLength: gzip.reduce((n, b) => n + b.length, 0),
        jsonLength,
        buildMillis: (yield* Clock.currentTimeMillis) - started
      }
      current = built
      yield* Effect.logInfo("catalogue dump built").pipe(Effect.annotateLogs({
        items: built.itemsCount,
        gzip_bytes: built.gzipLength,
        json_bytes: built.jsonLength,
        millis: built.buildMillis
      }))
      return built
    }).pipe(Effect.withSpan("CatalogueDump.build"))

    yield* fibers.supervise("catalogue-dump", (beat) =>
      Effect.zipRight(engine.awaitSynced, Effect.forever(Effect.gen(function*() {
        yield* build
        yield* beat
        yield* Effect.sleep(`${settings.dumpIntervalSeconds} seconds`)
      }))))

    yield* readiness.register("catalogue_dump", Effect.sync(() => current !== undefined))
    const ageGauge = metrics.gauge({ name: "catalogue_dump_age_seconds", help: "Seconds since the served dump was generated" })
    const downloadsGauge = metrics.gauge({ name: "catalogue_dump_downloads", help: "Dump downloads in progress" })
    yield* metrics.onScrape(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (current !== undefined) ageGauge.set((now - current.generatedAt.getTime()) / 1000)
      downloadsGauge.set(downloads)
    }))

    /** Takes a download slot; None when every slot is in use. Release with `release`. */
    const acquireDownload = Effect.sync(() => {
      if (downloads >= settings.dumpMaxConcurrentDownloads) return false
      downloads++
      return true
    })
    const releaseDownload = Effect.sync(() => { downloads = Math.max(0, downloads - 1) })

    /** The JSON bytes, decompressed on the fly for clients that do not accept gzip. */
    const identityStream = (dump: BuiltDump): Readable => Readable.from(dump.gzip).pipe(zlib.createGunzip())

    return {
      current: () => Option.fromNullable(current),
      build,
      acquireDownload,
      releaseDownload,
      identityStream
    } as const
  }),
  dependencies: [CatalogueEngine.Default]
}) {}
