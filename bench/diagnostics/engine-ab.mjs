/**
 * bench/diagnostics/engine-ab: two builds of the service tail the same change log at once, so their
 * engines' CPU per logged change is compared in the same windows, under the same writes and the
 * same noise (bench/diagnostics/engine-cost measures one build against its own idle baseline; its
 * figures move ±25 % from one window to the next, more than most changes worth trying). No feed
 * client; bench/stream's external writer (writer.mjs) writes --rate changes a second with the
 * simulator's mix. Both services share one database: one of them is the sync leader (idle here,
 * churn 0); --swap runs the pair again with the roles and start order reversed.
 *
 *   node bench/diagnostics/engine-ab.mjs --a dist-old/src/main.js --b dist/src/main.js
 *        [--catalogue 20000] [--rate 1000] [--windows 6] [--seconds 15] [--settle 30] [--swap]
 *
 * Build the other revision into a sibling of dist/ (the service finds migrations/ from there):
 *   git stash && npx tsc -p tsconfig.build.json && cp -r dist dist-old && git stash pop && npm run build
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { argOptions, connectClient, cpuMs, createDatabase, forkChild, mean, ROOT, round, rpc, sleep, startService } from "../lib/harness.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const opts = argOptions(process.argv.slice(2), {
  a: "dist/src/main.js",
  b: "dist/src/main.js",
  catalogue: 20000,
  rate: 1000,
  windows: 6,
  seconds: 15,
  settle: 30,
  swap: false
})

const pair = async (first, second) => {
  const db = await createDatabase("mps_engine_ab")
  const extra = { SIM_CATALOGUE_SIZE: String(opts.catalogue), SIM_CHURN_PER_SECOND: "0", DUMP_INTERVAL_SECONDS: "3600" }
  const start = (entry) =>
    startService({ databaseUrl: db.url, dataDir: mkdtempSync(join(tmpdir(), "mps-engine-ab-")), extra, untilIdle: true, entry: resolve(ROOT, entry) })
  const services = {}
  services[first.label] = await start(first.entry)
  services[second.label] = await start(second.entry)
  const client = await connectClient(db.url)
  const writer = forkChild(join(HERE, "../stream/writer.mjs"), [], { ...process.env, DATABASE_URL: db.url, RATE: String(opts.rate) }, "writer")
  const cpu = () => ({ A: cpuMs(services.A.child.pid), B: cpuMs(services.B.child.pid) })
  const perChange = { A: [], B: [] }
  try {
    await new Promise((r) => writer.child.once("message", r))
    writer.call = rpc(writer)
    const head = async () => Number((await client.query("SELECT head_seq FROM catalogue_state")).rows[0].head_seq)
    await sleep(opts.settle * 1000)
    let c0 = cpu()
    await sleep(opts.seconds * 1000)
    let c1 = cpu()
    console.log(`  no changes: A ${round((c1.A - c0.A) / opts.seconds, 1)}, B ${round((c1.B - c0.B) / opts.seconds, 1)} ms CPU a second`)
    await writer.call({ cmd: "start" })
    await sleep(opts.settle * 1000)
    for (let w = 0; w < opts.windows; w++) {
      const h0 = await head()
      c0 = cpu()
      await sleep(opts.seconds * 1000)
      const n = (await head()) - h0
      c1 = cpu()
      for (const k of ["A", "B"]) perChange[k].push(((c1[k] - c0[k]) * 1000) / n)
      console.log(`  window ${w}: ${round(n / opts.seconds)} changes/s; A ${round(perChange.A[w], 1)}, B ${round(perChange.B[w], 1)} µs CPU per logged change`)
    }
    await writer.call({ cmd: "stop" })
  } finally {
    await writer.stop()
    await client.end()
    for (const s of Object.values(services)) await s.stop()
    await db.drop()
  }
  return perChange
}

console.log(`A = ${opts.a}, B = ${opts.b}; ${opts.catalogue} items, ${opts.rate} changes/s`)
const runs = [await pair({ label: "A", entry: opts.a }, { label: "B", entry: opts.b })]
if (opts.swap) runs.push(await pair({ label: "B", entry: opts.b }, { label: "A", entry: opts.a }))
const all = { A: runs.flatMap((r) => r.A), B: runs.flatMap((r) => r.B) }
console.log(
  `mean of ${all.A.length} windows: A ${round(mean(all.A), 1)}, B ${round(mean(all.B), 1)} µs per logged change; B/A ${round(mean(all.B) / mean(all.A), 3)}`
)
process.exit(0)
