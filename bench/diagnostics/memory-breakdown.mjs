/**
 * Where the catalogue index's memory goes, per item, outside the service: the same synthetic
 * items (seed 730), each JSON string made flat the way the pg driver hands it over
 * (Buffer#toString of the row's bytes), parsed and indexed exactly as the engine's load does
 * (dist/src/Catalogue/Index.js: entryOf with the index's interner, CatalogueIndex.upsert).
 *
 *   node --expose-gc bench/diagnostics/memory-breakdown.mjs [N=200000]
 *
 * Prints the V8 heap after a full GC at each step, per item.
 */
import { CatalogueIndex, entryOf } from "../../dist/src/Catalogue/Index.js"
import { serialise } from "../../dist/src/Domain/CatalogItem.js"
import { syntheticListing } from "../../dist/src/Providers/Simulator/Listings.js"

if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc")
const N = Number(process.argv[2] ?? 200_000)
const heap = () => {
  globalThis.gc()
  globalThis.gc()
  return process.memoryUsage().heapUsed
}
const per = (bytes) =>
  `${Math.round(bytes / N)} B/item (${Math.round(bytes / 2 ** 20)} MiB for ${N}; ${Math.round((bytes / N) * 1e6 / 2 ** 20)} MiB per 1,000,000)`

const rows = []
let utf8 = 0
let twoByte = 0
for (let i = 0; i < N; i++) {
  const l = syntheticListing(730, i)
  const bytes = Buffer.from(serialise(l.item))
  utf8 += bytes.length
  rows.push({ bytes, priceCents: Math.round(l.item.price * 100) })
}
const h0 = heap()
const jsons = rows.map((r) => {
  const s = r.bytes.toString("utf8")
  // eslint-disable-next-line no-control-regex
  if (/[^\u0000-\u00ff]/.test(s)) twoByte++
  return s
})
const h1 = heap()
console.log(
  `items: ${N}; JSON ${Math.round(utf8 / N)} UTF-8 bytes/item on average; ${
    (twoByte / N * 100).toFixed(1)
  } % of the items have a character beyond Latin-1 (™, ★) and are stored as two-byte strings`
)
console.log(`1. the JSON strings alone (as pg returns them):       ${per(h1 - h0)}`)

const index = new CatalogueIndex()
const entries = jsons.map((json, i) => entryOf(JSON.parse(json), rows[i].priceCents, json, index.interner))
const h2 = heap()
console.log(`2. + the Entry objects (id string, interned names):   ${per(h2 - h1)}`)

const byId = new Map()
for (const e of entries) byId.set(e.id, e)
const h3 = heap()
console.log(`   (a Map by id of them alone:                        ${per(h3 - h2)})`)
byId.clear()

for (const e of entries) index.upsert(e)
const h4 = heap()
console.log(`3. + CatalogueIndex (byId Map, price list, 4 secondary lists): ${per(h4 - h2 - 0)}`)
console.log(`total: ${per(h4 - h0)}`)

// the same strings if they were one-byte only / kept as UTF-8 Buffers
const asBuffers = jsons.map((s) => Buffer.from(s))
const h5 = heap()
const external = asBuffers.reduce((n, b) => n + b.length, 0)
console.log(`for comparison: the same JSON held as UTF-8 Buffers: ${per(external)} outside the V8 heap (+ ${per(h5 - h4)} of Buffer objects in it)`)
