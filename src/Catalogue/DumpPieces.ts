/**
 * The full dump's pieces (Dump.ts): runs of id-prefix buckets whose JSON is deflated apart, each
 * ending on a sync flush, so that they join, after a gzip header and before an empty final block
 * and the trailer, into one valid gzip member (as pigz joins its blocks).
 */
import * as zlib from "node:zlib"
import { type Piece } from "./DeflateWorkers.js"
import type { DumpFile } from "./DumpFile.js"
import { type Entry, jsonListLength, writeJsonList } from "./Entry.js"
import { BUCKET_BITS } from "./Index.js"

/** Items per piece, about: a piece is a run of id-prefix buckets, as many pieces as this makes. */
const PIECE_ITEMS = 1_500
export const GZIP_LEVEL = 1

export const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff])
/** An empty final fixed-Huffman block: ends the deflate stream after the sync-flushed pieces. */
export const DEFLATE_END = Buffer.from([0x03, 0x00])

export const trailer = (crc: number, length: number) => {
  const buffer = Buffer.alloc(8)
  buffer.writeUInt32LE(crc >>> 0, 0)
  buffer.writeUInt32LE(length % 0x1_0000_0000, 4)
  return buffer
}

/** A few bytes (the dump's head, tail, a comma) as a piece, deflated here: microseconds. */
export const smallPieceOf = (raw: Buffer): Piece => ({
  deflated: zlib.deflateRawSync(raw, { level: GZIP_LEVEL, finishFlush: zlib.constants.Z_SYNC_FLUSH }),
  crc: zlib.crc32(raw),
  length: raw.length
})

/** A piece of the last build, in its dump file. */
export interface StoredPiece {
  readonly file: DumpFile
  readonly offset: number
  readonly size: number
  readonly crc: number
  readonly length: number
}

/** Prefix bits of the id that choose an item's piece, for a catalogue of `size` items. */
export const prefixBits = (size: number) => Math.min(BUCKET_BITS, Math.max(0, Math.ceil(Math.log2(size / PIECE_ITEMS))))

/** Whether every bucket of a piece is the same array as in the last build: then so are its items. */
export const sameBuckets = (now: ReadonlyArray<ReadonlyArray<Entry>>, before: ReadonlyArray<ReadonlyArray<Entry>>, from: number, to: number) => {
  for (let b = from; b < to; b++) if (now[b] !== before[b]) return false
  return true
}

/** The JSON of a piece's items, comma-separated, written into `target`; its length. */
export const writeItems = (target: Buffer, buckets: ReadonlyArray<ReadonlyArray<Entry>>, from: number, to: number) => {
  let at = 0
  for (let b = from; b < to; b++) at = writeJsonList(target, at, buckets[b]!, at > 0)
  return at
}

/** How many items a piece has and the bytes of their comma-separated JSON. */
export const itemBytes = (buckets: ReadonlyArray<ReadonlyArray<Entry>>, from: number, to: number) => {
  let bytes = 0
  let count = 0
  for (let b = from; b < to; b++) {
    const bucket = buckets[b]!
    if (bucket.length === 0) continue
    bytes += (count > 0 ? 1 : 0) + jsonListLength(bucket)
    count += bucket.length
  }
  return { count, bytes }
}
