/**
 * bench/diagnostics/profile-buy: a CPU profile of the service under POST /buy (16 connections,
 * each request a distinct item), written to bench/purchases/out/, with its self time summed by
 * function and by package. For finding where a buy's CPU goes, not for figures.
 *
 *   node bench/diagnostics/profile-buy.mjs [--seconds 10] [--connections 16]
 */
import autocannon from "autocannon"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { argOptions, cpuMs, cpuSplit, createDatabase, fundedMerchant, ROOT, startService } from "../lib/harness.mjs"
const opts = argOptions(process.argv.slice(2), { seconds: 10, connections: 16 })
const outDir = join(ROOT, "bench/purchases/out", `profile-${Date.now()}`)
mkdirSync(outDir, { recursive: true })
const db = await createDatabase("mps_bench_profile")
const service = await startService({
  databaseUrl: db.url,
  dataDir: mkdtempSync(join(tmpdir(), "mps-profile-")),
  nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${outDir}`],
  extra: { SIM_CATALOGUE_SIZE: "20000", SIM_TIME_SCALE: "100" },
  untilIdle: true
})
const m = await fundedMerchant(service, "profile", 2_000_000)
const dbc = new pg.Client({ connectionString: db.url })
await dbc.connect()
const itemIds = (await dbc.query("SELECT id FROM catalogue_items WHERE status = 'active' ORDER BY random()")).rows.map((r) => r.id)
await dbc.end()
let next = 0
const key = m.api_key ?? m.apiKey
const bodyOf = (i) =>
  JSON.stringify({
    item_id: itemIds[i],
    max_price: 100000,
    custom_id: `pb-${i}`,
    target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
  })
const c0 = cpuMs(service.child.pid)
const cpuBefore = cpuSplit(service.child.pid)
const loadStart = Date.now()
const r = await autocannon({
  url: `${service.baseUrl}/api/v1/merchant/buy`,
  method: "POST",
  connections: Number(opts.connections),
  duration: Number(opts.seconds),
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  requests: [{ setupRequest: (req) => ({ ...req, body: bodyOf(next++) }) }]
})
const cpu = cpuMs(service.child.pid) - c0
const cpuAfter = cpuSplit(service.child.pid)
const loadEnd = Date.now()
console.log(
  `${r.requests.total} requests, ${Math.round(r.requests.average)} req/s, p99 ${r.latency.p99} ms, ${
    Math.round((cpu * 1000) / r.requests.total)
  } µs CPU/request`,
  JSON.stringify(r.statusCodeStats)
)
await new Promise((res) => setTimeout(res, 3000))
await service.stop()
const stopped = Date.now()
await db.drop()
const file = readdirSync(outDir).find((f) => f.endsWith(".cpuprofile"))
console.log(
  `load window: ${stopped - loadStart} to ${stopped - loadEnd} ms before the exit; user ${cpuAfter.user - cpuBefore.user} ms, system ${
    cpuAfter.system - cpuBefore.system
  } ms, context switches voluntary ${cpuAfter.voluntary - cpuBefore.voluntary}, involuntary ${cpuAfter.involuntary - cpuBefore.involuntary}`
)
const profile = JSON.parse(readFileSync(join(outDir, file), "utf8"))
// only the samples of the load's window, placed by its distance from the profile's end (the exit)
const windowStart = profile.endTime - (stopped - loadStart) * 1000
const windowEnd = profile.endTime - (stopped - loadEnd) * 1000
const dt = new Map()
for (let i = 0, at = profile.startTime; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0
  if (at >= windowStart && at <= windowEnd) dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0))
}
const byFn = new Map(), byPkg = new Map()
let total = 0
for (const node of profile.nodes) {
  const t = dt.get(node.id) ?? 0
  total += t
  const f = node.callFrame
  const pkg = f.url.includes("node_modules/")
    ? f.url.split("node_modules/").pop().split("/").slice(0, f.url.includes("@") ? 2 : 1).join("/")
    : f.url === ""
    ? `(${f.functionName})`
    : f.url.startsWith("node:")
    ? f.url
    : f.url.replace(/.*\/(dist|src)\//, "")
  const fn = `${f.functionName || "(anon)"} ${pkg}:${f.lineNumber}`
  byFn.set(fn, (byFn.get(fn) ?? 0) + t)
  byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + t)
}
const top = (m, n) =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${(v / 1000).toFixed(0).padStart(7)} ms ${(100 * v / total).toFixed(1).padStart(5)}%  ${k}`)
    .join("\n")
console.log(
  `profile ${join(outDir, file)}, ${(total / 1000).toFixed(0)} ms sampled\n-- by package/file --\n${top(byPkg, 25)}\n-- by function --\n${top(byFn, 40)}`
)
