/**
 * bench/diagnostics/buy-tail: where do the slowest POST /buy answers at 16 clients come from?
 *
 *   node bench/diagnostics/buy-tail.mjs [--rounds 3] [--seconds 10] [--catalogue 100000] [--worker on|deferred]
 *                                       [--entry path/to/main.mjs] [--profile true] [--census /var/log/postgresql/...log]
 *
 * The service (this build, or --entry: another revision's, from build-revision.sh) on a fresh
 * database with loop-stall-preload.mjs (event-loop stalls and garbage collections, timed), 16
 * funded merchants without webhook URLs and 16 keep-alive clients as in bench/purchases. Per round
 * (2 s of warm-up, then --seconds): buys/s, p50, p99, the answers over 50 ms; the service's CPU
 * per buy (user, system), its main thread's context switches (involuntary ones are the other
 * processes on its core) and its webhook attempts per buy; how long the event loop was held and
 * collections ran inside the slowest 1 % of answers against inside every answer; and how the
 * slowest answers cluster in time (100 ms buckets: a cluster of 16 is every client at once).
 * --profile: a CPU profile of the last round, summed (bench/http/cpuprofile-summary.mjs).
 * --census: every statement of the database logged by PostgreSQL (that server log, readable), the
 * statements that took most time inside PostgreSQL per buy.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { printSummary, summarise } from "../http/cpuprofile-summary.mjs"
import { argOptions, buildIfNeeded, cpuSplit, log, sleep, startBuyService, withAdminClient } from "../lib/harness.mjs"
import { openConnection } from "../lib/http-connection.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const TRADE_URL = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
const CLIENTS = 16

const opts = argOptions(process.argv.slice(2), {
  rounds: 3,
  seconds: 10,
  catalogue: 100000,
  worker: "on",
  entry: "",
  profile: false,
  census: ""
})
if (opts.entry === "") buildIfNeeded()
const traceDir = mkdtempSync(join(tmpdir(), "buy-tail-"))
process.env.LOOP_TRACE = join(traceDir, "loop")
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --import ${join(HERE, "loop-stall-preload.mjs")}`.trim()

const logSize = () => opts.census === "" ? 0 : statSync(opts.census).size
const { db, itemIds, merchants, service } = await startBuyService({
  name: "mps_buy_tail",
  dataDir: join(traceDir, "data"),
  catalogue: opts.catalogue,
  worker: opts.worker,
  merchants: CLIENTS,
  entry: opts.entry,
  nodeArgs: opts.profile ? ["--cpu-prof", `--cpu-prof-dir=${join(traceDir, "profile")}`] : [],
  // --census: every statement of the database logged (PostgreSQL's log_min_duration_statement)
  beforeStart: (database) =>
    opts.census === "" ? Promise.resolve() : withAdminClient((c) => c.query(`ALTER DATABASE ${database.name} SET log_min_duration_statement = 0`))
})

/** Epoch ms with sub-ms precision (the preload's clock). */
const now = () => performance.timeOrigin + performance.now()

/** Webhook attempts the service has made (every outcome), from its /metrics. */
const webhookAttempts = async () => {
  const text = await fetch(`${service.opsUrl}/metrics`).then((r) => r.text())
  return [...text.matchAll(/^webhook_attempts_total\{[^}]*\} (\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0)
}

/** What one round measured, from its start to its end. */
const measure = async () => {
  const at = now()
  const cpu = cpuSplit(service.child.pid)
  return { at, cpu, attempts: await webhookAttempts(), logAt: logSize() }
}

const url = new URL(service.baseUrl)
let nextItem = 0
const rounds = []
for (let r = 0; r < opts.rounds; r++) {
  const connections = await Promise.all(Array.from({ length: CLIENTS }, () => openConnection(url.hostname, Number(url.port))))
  let stop = false
  const requests = []
  const run = async (i) => {
    const headers = { authorization: `Bearer ${merchants[i].api_key}`, "content-type": "application/json" }
    while (!stop) {
      const n = nextItem++
      const body = { item_id: itemIds[n], max_price: 100000000, custom_id: `tail-${n}`, target_trade_url: TRADE_URL }
      const start = now()
      const res = await connections[i].request("POST", "/api/v1/merchant/buy", headers, JSON.stringify(body))
      if (res.status !== 201) throw new Error(`status ${res.status}: ${res.body}`)
      requests.push([start, now()])
    }
  }
  const running = connections.map((_, i) => run(i))
  await sleep(2000)
  const start = await measure()
  await sleep(opts.seconds * 1000)
  const end = await measure()
  stop = true
  await Promise.all(running)
  connections.forEach((connection) => connection.close())
  rounds.push({ start, end, requests: requests.filter(([s]) => s >= start.at && s <= end.at) })
  await sleep(1500)
}
const pid = service.child.pid
await service.stop()
await db.drop()

if (opts.profile) {
  const dir = join(traceDir, "profile")
  const profile = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8"))
  // the profile's clock is CLOCK_MONOTONIC in µs (process.hrtime's)
  const monotonic = (epochMs) => Number(process.hrtime.bigint() / 1000n) - (now() - epochMs) * 1000
  const last = rounds.at(-1)
  printSummary(summarise(profile, { top: 45, from: monotonic(last.start.at), to: monotonic(last.end.at) }))
}
const trace = JSON.parse(readFileSync(`${process.env.LOOP_TRACE}.${pid}`, "utf8"))
rmSync(traceDir, { recursive: true, force: true })

const KINDS = { 1: "young", 4: "full", 8: "incremental", 16: "weak" }
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
const groupBy = (values, keyOf) => {
  const groups = {}
  for (const value of values) (groups[keyOf(value)] ??= []).push(value)
  return groups
}
const mean = (values) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)
/** How much of [s, e] the intervals cover. */
const coverage = (intervals) => ([s, e]) => intervals.reduce((sum, [from, to]) => sum + Math.max(0, Math.min(to, e) - Math.max(from, s)), 0)

/** The statements that took most time inside PostgreSQL in the log between two offsets. */
const census = ([from, to], buys) => {
  const counts = new Map()
  for (const record of readFileSync(opts.census).subarray(from, to).toString().split(/\n(?=\d{4}-\d\d-\d\d )/)) {
    if (!record.includes(`@${db.name} `)) continue
    const m = record.match(/duration: ([\d.]+) ms\s+(?:statement|execute [^:]*): ([\s\S]*)$/)
    if (m === null) continue
    const key = m[2].replace(/\s+/g, " ").trim().slice(0, 70)
    const entry = counts.get(key) ?? { n: 0, ms: 0 }
    entry.n++
    entry.ms += Number(m[1])
    counts.set(key, entry)
  }
  return [...counts].sort((a, b) => b[1].ms - a[1].ms).slice(0, 8)
    .map(([key, v]) => `  SQL ${(v.n / buys).toFixed(2)} per buy, ${(v.ms / buys * 1000).toFixed(0)} µs inside PostgreSQL per buy: ${key}`)
}

log(`${opts.catalogue} items, worker ${opts.worker}, ${CLIENTS} clients, ${opts.seconds} s a round`)
for (const [i, { start, end, requests }] of rounds.entries()) {
  const n = requests.length
  const latencies = requests.map(([s, e]) => e - s).sort((a, b) => a - b)
  const p99 = percentile(latencies, 0.99)
  const slowest = requests.filter(([s, e]) => e - s >= p99)
  const within = ([at]) => at >= start.at && at <= end.at
  const collections = trace.collections.filter(within).map(([at, duration, kind]) => ({ at, duration, kind: KINDS[kind] ?? kind }))
  const stalls = trace.stalls.filter(within)
  const gcIn = coverage(collections.map((c) => [c.at, c.at + c.duration]))
  const heldIn = coverage(stalls.map(([at, length]) => [at - length, at]))
  const kinds = groupBy(collections, (c) => c.kind)
  const buckets = Object.entries(groupBy(slowest, ([s]) => Math.floor((s - start.at) / 100)))
    .map(([bucket, answers]) => [bucket, answers.length]).sort((a, b) => b[1] - a[1]).slice(0, 12)
  const cpu = (key) => end.cpu[key] - start.cpu[key]
  log(
    `round ${i + 1}: ${Math.round(n / opts.seconds)} buys/s, p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, ` +
      `max ${latencies.at(-1).toFixed(1)} ms, over 50 ms: ${latencies.filter((l) => l > 50).length} of ${n}`
  )
  log(
    `  CPU per buy: user ${(cpu("user") / n * 1000).toFixed(0)} µs, system ${(cpu("system") / n * 1000).toFixed(0)} µs; ` +
      `main thread's context switches per buy: voluntary ${(cpu("voluntary") / n).toFixed(2)}, involuntary ${(cpu("involuntary") / n).toFixed(2)}; ` +
      `webhook attempts per buy ${((end.attempts - start.attempts) / n).toFixed(2)}`
  )
  if (opts.census !== "") census([start.logAt, end.logAt], n).forEach((line) => log(line))
  log(
    `  collections: ${
      Object.entries(kinds).map(([k, cs]) =>
        `${k} ${cs.length}× (mean ${mean(cs.map((c) => c.duration)).toFixed(1)} ms, max ${Math.max(...cs.map((c) => c.duration)).toFixed(1)} ms)`
      ).join(", ")
    }`
  )
  log(
    `  event loop held over 3 ms: ${stalls.length}×, ${stalls.reduce((a, [, l]) => a + l, 0).toFixed(0)} ms in all, longest ${
      Math.max(0, ...stalls.map(([, l]) => l)).toFixed(1)
    } ms`
  )
  log(
    `  inside each of the slowest 1 % (${slowest.length}): loop held ${mean(slowest.map(heldIn)).toFixed(1)} ms, collections ${
      mean(slowest.map(gcIn)).toFixed(1)
    } ms; ` +
      `inside each answer: ${mean(requests.map(heldIn)).toFixed(1)} ms and ${mean(requests.map(gcIn)).toFixed(1)} ms`
  )
  log(`  the slowest 1 % by 100 ms bucket (bucket:count), busiest first: ${buckets.map(([b, count]) => `${b}:${count}`).join(" ")}`)
}
process.exit(0)
