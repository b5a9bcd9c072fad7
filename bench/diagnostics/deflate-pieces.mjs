/**
 * The dump's per-piece work (src/Catalogue/Dump.ts) outside the service, to see what the event
 * loop pays per piece: joining 2,000 items' JSON strings, Buffer.from (UTF-8), crc32, and
 * zlib.deflateRaw on the thread pool with the dump's options, with zlib's default output
 * chunkSize (16 KiB: one thread-pool round trip and one main-thread callback per 16 KiB of
 * output) against one output chunk per piece.
 *
 *   node bench/diagnostics/deflate-pieces.mjs [pieces=40]
 *
 * Main-thread CPU comes from /proc/self/task/<pid>/schedstat (the main thread only).
 */
import { readFileSync } from "node:fs"
import * as zlib from "node:zlib"
import { serialise } from "../../dist/src/Domain/CatalogItem.js"
import { syntheticListing } from "../../dist/src/Providers/Simulator/Listings.js"

const PIECE_ITEMS = 2_000
const PIECES = Number(process.argv[2] ?? 40)
const mainCpuMs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]) / 1e6

// the items' JSON as the engine holds it: flat strings, as pg hands them over
const jsons = []
for (let i = 0; i < PIECES * PIECE_ITEMS; i++) jsons.push(Buffer.from(serialise(syntheticListing(730, i).item)).toString())

const join = (p) => {
  let text = p === 0 ? "" : ","
  for (let j = p * PIECE_ITEMS; j < (p + 1) * PIECE_ITEMS; j++) text += (j === p * PIECE_ITEMS ? "" : ",") + jsons[j]
  return text
}

const deflate = (raw, extra) =>
  new Promise((resolve, reject) =>
    zlib.deflateRaw(raw, { level: 1, finishFlush: zlib.constants.Z_SYNC_FLUSH, ...extra }, (e, out) => (e ? reject(e) : resolve(out)))
  )

const run = async (label, extra) => {
  let joinMs = 0
  let encodeMs = 0
  let crcMs = 0
  let worstStep = 0
  let raw = 0
  let out = 0
  const cpu0 = mainCpuMs()
  const t0 = performance.now()
  const inFlight = []
  for (let p = 0; p < PIECES; p++) {
    const a = performance.now()
    const text = join(p)
    const b = performance.now()
    const buf = Buffer.from(text)
    const c = performance.now()
    zlib.crc32(buf)
    const d = performance.now()
    joinMs += b - a
    encodeMs += c - b
    crcMs += d - c
    worstStep = Math.max(worstStep, d - a)
    raw += buf.length
    if (inFlight.length >= 2) out += (await inFlight.shift()).length
    inFlight.push(deflate(buf, extra))
    await new Promise((r) => setImmediate(r))
  }
  for (const f of inFlight) out += (await f).length
  const wall = performance.now() - t0
  const cpu = mainCpuMs() - cpu0
  console.log(
    `${label}: ${PIECES} pieces, ${(raw / 2 ** 20).toFixed(0)} MiB JSON -> ${(out / 2 ** 20).toFixed(0)} MiB; wall ${wall.toFixed(0)} ms;` +
      ` main-thread CPU ${cpu.toFixed(0)} ms (${(cpu / PIECES).toFixed(1)} ms a piece: join ${(joinMs / PIECES).toFixed(1)}, Buffer.from ${
        (encodeMs / PIECES).toFixed(1)
      },` +
      ` crc32 ${(crcMs / PIECES).toFixed(1)}, the rest (zlib callbacks, GC) ${
        ((cpu - joinMs - encodeMs - crcMs) / PIECES).toFixed(1)
      }); longest synchronous step ${worstStep.toFixed(1)} ms`
  )
  return { wall, cpu }
}

await run("warm-up             ", {})
await run("default chunkSize   ", {})
await run("chunkSize 4 MiB     ", { chunkSize: 4 * 2 ** 20 })
await run("default chunkSize   ", {})
await run("chunkSize 4 MiB     ", { chunkSize: 4 * 2 ** 20 })
