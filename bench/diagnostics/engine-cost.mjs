/**
 * bench/diagnostics/engine-cost: the catalogue engine's CPU per logged change, the part of the feed's
 * CPU per delivered change that the bare broadcaster does not have (bench/stream/run.mjs divides
 * it by the number of clients). No feed client is connected: the service only tails the change log
 * and applies it to its index. bench/stream's external writer (writer.mjs) writes --rate changes a
 * second with the simulator's mix; the baseline is the same service with no changes, measured
 * first in the same run. Prints the service's CPU (utime + stime) per logged change in --windows
 * windows of --seconds; each phase starts after --settle seconds.
 *
 *   node bench/diagnostics/engine-cost.mjs [--catalogue 20000] [--rate 1000] [--windows 3] [--seconds 20]
 *                                     [--settle 20] [--nodeArgs "--cpu-prof --cpu-prof-dir=/tmp/p"]
 *
 * BENCH_SERVICE_ENTRY picks the build (bench/lib/harness.mjs), so two builds can be compared.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { argOptions, connectClient, cpuMs, createDatabase, forkChild, MAIN, rpc, sleep, startService } from "../lib/harness.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const opts = argOptions(process.argv.slice(2), { catalogue: 20000, rate: 1000, windows: 3, seconds: 20, settle: 20, nodeArgs: "" })

const db = await createDatabase("mps_engine_cost")
const service = await startService({
  databaseUrl: db.url,
  dataDir: mkdtempSync(join(tmpdir(), "mps-engine-cost-")),
  extra: { SIM_CATALOGUE_SIZE: String(opts.catalogue), SIM_CHURN_PER_SECOND: "0", DUMP_INTERVAL_SECONDS: "3600" },
  untilIdle: true,
  nodeArgs: opts.nodeArgs === "" ? [] : opts.nodeArgs.split(" ")
})
const client = await connectClient(db.url)
const writer = forkChild(join(HERE, "../stream/writer.mjs"), [], { ...process.env, DATABASE_URL: db.url, RATE: String(opts.rate) }, "writer")
try {
  await new Promise((resolve) => writer.child.once("message", resolve))
  writer.call = rpc(writer)
  const head = async () => Number((await client.query("SELECT head_seq FROM catalogue_state")).rows[0].head_seq)

  await sleep(opts.settle * 1000)
  const c0 = cpuMs(service.child.pid)
  await sleep(opts.seconds * 1000)
  const idle = (cpuMs(service.child.pid) - c0) / opts.seconds
  console.log(`${MAIN}, ${opts.catalogue} items`)
  console.log(`baseline, no changes: ${idle.toFixed(1)} ms CPU a second`)

  await writer.call({ cmd: "start" })
  await sleep(opts.settle * 1000)
  const perChange = []
  for (let w = 0; w < opts.windows; w++) {
    const h0 = await head(), t0 = cpuMs(service.child.pid)
    await sleep(opts.seconds * 1000)
    const h1 = await head(), t1 = cpuMs(service.child.pid)
    perChange.push({ changes: (h1 - h0) / opts.seconds, us: ((t1 - t0) * 1000) / (h1 - h0) })
  }
  await writer.call({ cmd: "stop" })
  for (const { changes, us } of perChange) {
    console.log(
      `${changes.toFixed(0)} changes a second: ${us.toFixed(1)} µs CPU per logged change (${(us - (idle * 1000) / changes).toFixed(1)} above the baseline)`
    )
  }
} finally {
  await writer.stop()
  await client.end()
  await service.stop()
  await db.drop()
}
process.exit(0)
