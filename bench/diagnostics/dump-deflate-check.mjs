/**
 * Replays the dump's deflate calls (src/Catalogue/Dump.ts: zlib.deflateRaw(piece, { level: 1,
 * finishFlush: Z_SYNC_FLUSH }, cb), two at a time) on the real pieces of the synthetic catalogue
 * (seed 730, items in id order as the engine's load leaves them, 2,000 a piece), with a timeout
 * on each callback: does every call come back? Reports the pieces whose deflated size is a
 * multiple of zlib's 16 KiB output chunk (the stream then asks zlib for more output with no input
 * left) and any call that never calls back.
 *
 *   node --max-old-space-size=4096 [--expose-gc] bench/diagnostics/dump-deflate-check.mjs [items=1000000] [rounds=3]
 *        [--piece-length L] [--gc-storm]
 *
 * --gc-storm (with --expose-gc): a full GC every 5 ms meanwhile, as in a service whose heap holds
 * a million items while the dump allocates.
 */
import * as zlib from "node:zlib"
import { serialise } from "../../dist/src/Domain/CatalogItem.js"
import { syntheticListing } from "../../dist/src/Providers/Simulator/Listings.js"

const args = process.argv.slice(2).filter((a) => !a.startsWith("--"))
const N = Number(args[0] ?? 1_000_000)
const ROUNDS = Number(args[1] ?? 3)
const lengthFlag = process.argv.indexOf("--piece-length")
const onlyLength = lengthFlag > 0 ? Number(process.argv[lengthFlag + 1]) : undefined
if (process.argv.includes("--gc-storm")) {
  if (typeof globalThis.gc !== "function") throw new Error("--gc-storm needs node --expose-gc")
  setInterval(() => globalThis.gc({ type: "minor" }), 2).unref()
  setInterval(() => globalThis.gc(), 50).unref()
}
const PIECE_ITEMS = 2_000
const CHUNK = 16 * 1024
const TIMEOUT_MS = 30_000

const t0 = performance.now()
const items = []
for (let i = 0; i < N; i++) {
  const item = syntheticListing(730, i).item
  items.push({ id: item.id, json: Buffer.from(serialise(item)).toString() })
}
items.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
console.log(`${N} items generated and sorted by id in ${((performance.now() - t0) / 1000).toFixed(0)} s`)

const pieceCount = Math.ceil(N / PIECE_ITEMS)
const pieceOf = (i) => {
  let text = i === 0 ? "" : ","
  for (let j = i * PIECE_ITEMS; j < Math.min(N, (i + 1) * PIECE_ITEMS); j++) text += (j === i * PIECE_ITEMS ? "" : ",") + items[j].json
  return Buffer.from(text)
}

const deflate = (raw) =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ hung: true }), TIMEOUT_MS)
    zlib.deflateRaw(raw, { level: 1, finishFlush: zlib.constants.Z_SYNC_FLUSH }, (error, out) => {
      clearTimeout(timer)
      resolve({ error, out })
    })
  })

let boundary = []
let hung = []
for (let round = 1; round <= ROUNDS; round++) {
  const started = performance.now()
  const inFlight = []
  const results = new Array(pieceCount)
  for (let i = 0; i < pieceCount; i++) {
    const raw = pieceOf(i)
    if (onlyLength !== undefined && raw.length !== onlyLength) continue
    if (inFlight.length >= 2) await inFlight.shift()
    inFlight.push(
      deflate(raw).then((r) => {
        results[i] = { ...r, rawLength: raw.length }
      })
    )
  }
  await Promise.all(inFlight)
  boundary = []
  for (let i = 0; i < pieceCount; i++) {
    const r = results[i]
    if (r === undefined) continue
    if (onlyLength !== undefined && round === 1) {
      console.log(`piece ${i}: ${r.rawLength} -> ${r.out?.length} bytes deflated (${r.out ? (r.out.length / CHUNK).toFixed(3) : "?"} chunks)`)
    }
    if (r.hung) hung.push({ round, piece: i, rawLength: r.rawLength })
    else if (r.out.length % CHUNK === 0) boundary.push({ piece: i, rawLength: r.rawLength, deflated: r.out.length })
  }
  console.log(
    `round ${round}: ${((performance.now() - started) / 1000).toFixed(1)} s; calls that never called back within ${TIMEOUT_MS / 1000} s: ` +
      `${hung.filter((h) => h.round === round).map((h) => `piece ${h.piece} (${h.rawLength} bytes)`).join(", ") || "none"}`
  )
}
console.log(
  `pieces whose deflated output is a multiple of ${CHUNK} bytes: ${
    boundary.map((b) => `piece ${b.piece} (${b.rawLength} -> ${b.deflated} bytes)`).join(", ") || "none"
  }`
)
process.exit(hung.length > 0 ? 1 : 0)
