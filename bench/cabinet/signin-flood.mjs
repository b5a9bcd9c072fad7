/**
 * bench/cabinet/signin-flood.mjs: a flood of cabinet sign-ins beside the merchant API's catalogue
 * reads. The password hashing is bounded per process (CABINET_PASSWORD_HASH_CONCURRENCY, _QUEUE):
 * does the API keep its rate and the process its memory while sign-ins pour in?
 *
 *   node bench/cabinet/signin-flood.mjs [--rate 200] [--duration 20] [--reads 2000] [--connections 32]
 *                                       [--saturate] [--database postgres|pglite] [--one-address]
 *                                       [--service-env NAME=value,...] [--wait-quiet 30]
 *
 * 1. A fresh database (PostgreSQL of BENCH_PG_URL, or a fresh PGlite data directory), the built
 *    service (what `npm start` runs) with its default cabinet settings, a merchant and its key.
 * 2. Reads, the API's normal work: GET /api/v1/merchant/items?limit=50 at --reads a second (100
 *    merchants polling at the default rate limit of 20 a second) over --connections keep-alive
 *    connections, each with one read in flight: a read is sent on time if a connection is free,
 *    so their rate falls when answers slow down (below 0.8 of the rate asked when the mean read
 *    takes longer than about connections / reads, 16 ms at the defaults). Three windows of
 *    --duration s: quiet, during the flood, quiet again; the rate during the flood is compared
 *    with the mean of the two quiet ones (target >= 0.8), and so are the latencies.
 *    --saturate reads as fast as `wrk -t1 -c<connections>` can instead: the machine's two cores
 *    are then shared by wrk, the service, PostgreSQL and the flood, and the figure says as much
 *    about wrk's share of the CPU as about the service.
 * 3. The flood: --rate sign-ins a second for --duration s (open loop: sent on time whatever the
 *    answers), each with a random login, password and code, from a random loopback address
 *    (127.x.y.z: many clients, so that each address's own budget of failures barely bites and the
 *    hashing bound is what holds); --one-address sends them all from 127.0.0.1. Every answer is
 *    counted by status, and so are timeouts (10 s) and connection errors (target: no 5xx, no
 *    timeouts).
 * 4. The service's RSS, sampled every 250 ms: its peak during the flood against the quiet
 *    windows' (target: within 100 MB); the password hashes it computed and the sign-ins its brakes
 *    refused, from /metrics.
 *
 * Nothing is pinned: the service, PostgreSQL and this script share the machine's cores, as they
 * would on a small host. Before each window the script waits (up to --wait-quiet s) for the
 * machine to be quiet. --service-env starts the service with other settings (e.g.
 * CABINET_PASSWORD_HASH_CONCURRENCY=1), to compare.
 *
 * The parts: the reads (reads.mjs), the sign-ins (sign-ins.mjs), the service's memory and counters
 * (memory.mjs), the summary (summary.mjs).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { admin, argOptions, buildIfNeeded, cpuMs, createDatabase, log, machineInfo, round, startService, waitQuiet } from "../lib/harness.mjs"
import { heapOf, metric, sampleRss } from "./memory.mjs"
import { pacedReads, wrk } from "./reads.mjs"
import { flood } from "./sign-ins.mjs"
import { printSummary } from "./summary.mjs"

const opts = argOptions(process.argv.slice(2), {
  rate: 200,
  duration: 20,
  reads: 2000,
  connections: 32,
  saturate: false,
  database: "postgres",
  "one-address": false,
  /** Settings for the service, `NAME=value,NAME=value` (e.g. CABINET_PASSWORD_HASH_CONCURRENCY=1). */
  "service-env": "",
  "wait-quiet": 30
})

// ---- the run -------------------------------------------------------------------------------------

buildIfNeeded()
const machine = await machineInfo()
log(`machine: ${machine.nproc} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, node ${machine.node}, PostgreSQL ${machine.postgres}`)
log(`revision ${machine.revision}; ${opts.database}`)
const readsWhat = opts.saturate ? `as fast as wrk -t1 -c${opts.connections} can` : `${opts.reads}/s over ${opts.connections} connections`
const from = opts["one-address"] ? "all from 127.0.0.1" : "each from a random 127.x.y.z"
log(`flood: ${opts.rate} sign-ins/s for ${opts.duration} s, ${from}; reads of /items: ${readsWhat}`)

const dataDir = mkdtempSync(join(tmpdir(), "signin-flood-"))
const database = opts.database === "pglite" ? undefined : await createDatabase("bench_signin_flood")
const serviceSettings = Object.fromEntries(opts["service-env"].split(",").filter(Boolean).map((pair) => pair.split("=")))
const service = await startService({ databaseUrl: database?.url, dataDir, untilIdle: true, extra: serviceSettings })
const merchant = await admin(service, "/admin/merchants", { name: "bench-reader", webhook_url: null })
const ITEMS = "/api/v1/merchant/items?limit=50"

const reads = (seconds) =>
  opts.saturate
    ? wrk(`${service.baseUrl}${ITEMS}`, merchant.api_key, seconds, opts.connections)
    : pacedReads(service.port, ITEMS, merchant.api_key, opts.reads, seconds, opts.connections)
await reads(3) // warm-up, not measured

/** One window of reads with `during` beside it: the reads' figures, the sign-ins' answers, RSS samples, CPU. */
const window = async (label, during) => {
  await waitQuiet(label, { maxSeconds: opts["wait-quiet"] })
  const rss = sampleRss(service.child.pid)
  const cpuBefore = cpuMs(service.child.pid)
  const [read, signIns] = await Promise.all([reads(opts.duration), during()])
  const cores = (cpuMs(service.child.pid) - cpuBefore) / (opts.duration * 1000)
  rss.stop()
  const heap = await heapOf(service)
  const latency = read.p50 === undefined ? "" : `, p50 ${round(read.p50, 2)} ms, p99 ${round(read.p99, 2)} ms, max ${round(read.max, 1)} ms`
  log(
    `  ${label.padEnd(14)} reads ${
      String(round(read.rate)).padStart(6)
    }/s${latency} (${read.requests} answered, ${read.non2xx} not 200, ${read.timeouts} timeouts, ${read.errors ?? read.socketErrors} connection errors)`
  )
  log(
    `  ${"".padEnd(14)} RSS ${round(Math.min(...rss.samples))}–${
      round(Math.max(...rss.samples))
    } MB (heap: new space ${heap.new}, old ${heap.old}, external ${heap.external} MB at the end); the service used ${round(cores, 2)} cores`
  )
  return { read, rss: rss.samples, signIns }
}

const hashesBefore = await metric(service, "cabinet_password_hashes_total")
const quietBefore = await window("quiet", async () => [])
const flooded = await window("sign-in flood", () => flood(service, opts.rate, opts.duration, opts["one-address"]))
const quietAfter = await window("quiet again", async () => [])
const hashes = (await metric(service, "cabinet_password_hashes_total")) - hashesBefore
const refused = {}
for (const brake of ["login", "address", "capacity"]) refused[brake] = await metric(service, `cabinet_attempts_refused_total{brake="${brake}"}`)

printSummary(opts, { quietBefore, flooded, quietAfter, hashes, refused })

await service.stop()
await database?.drop()
rmSync(dataDir, { recursive: true, force: true })
