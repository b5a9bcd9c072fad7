/** Worker of seed.mjs: COPY text rows of the synthetic listings [a, b). */
import { parentPort, workerData } from "node:worker_threads"
import { copyField, rowOf, useBuild } from "./seed.mjs"

await useBuild(workerData.distSrc)

const field = (v) => (v === null ? "\\N" : copyField(String(v)))

parentPort.on("message", ([a, b]) => {
  let text = ""
  for (let i = a; i < b; i++) {
    const r = rowOf(workerData.seed, i)
    text += `${r.id}\t${field(r.market_hash_name)}\t${r.price_cents}\t${field(r.provider_price_cents)}\t${r.status}\t` +
      `${field(r.item)}\t${field(r.sim)}\t${r.source}\n`
  }
  parentPort.postMessage({ text, count: b - a })
})
