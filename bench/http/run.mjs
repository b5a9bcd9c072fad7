/**
 * bench/http: the service's HTTP overhead against a bare `node:http` + `pg` baseline, and its
 * start-up time.
 *
 *   node bench/http/run.mjs [--connections 50] [--duration 10] [--warmup 2] [--rounds 2]
 *                           [--starts 5] [--no-load] [--no-startup] [--profile] [--profile-startup]
 *                           [--wait-quiet 60] [--quiet-busy 15] [--bare-joined]
 *
 * 1. Creates a fresh database on the PostgreSQL server of BENCH_PG_URL
 *    (postgres://postgres@127.0.0.1:5432/test by default), dropped at the end.
 * 2. Builds the service (`npm run build`) if its output is missing or older than src/, starts what
 *    `npm start` runs (`node dist/bundle/main.mjs`, the esbuild bundle; `node dist/src/main.js`
 *    if package.json says so) as a child process, creates a merchant and credits a deposit
 *    through the admin API.
 * 3. Starts the bare baseline (bench/http/bare-server.mjs, child process) on the same database,
 *    checks both answer GET /api/v1/merchant/balance with the same bytes and content-type.
 * 4. Loads each with `wrk -t1 -c50 --latency` pinned to core 1, every server (worker threads too)
 *    pinned to core 0, one at a time, alternating (service, bare, PGlite service, then the
 *    reverse), after a warm-up each time; prints requests/s, p50, p99 and the CPU time per
 *    request of each server process, and the ratios of the medians: service/bare (target >= 0.5)
 *    and the PGlite service / the PostgreSQL service (issue 26: >= 0.5).
 * 5. Start-up: median time from spawn until the API port accepts and the ops /health answers, on
 *    the migrated PostgreSQL database and on an already-initialised PGlite DATA_DIR; for what
 *    `npm start` runs and for the tsc output `node dist/src/main.js`.
 * 6. --profile: one more load run of the service under `node --cpu-prof`; prints where it spends
 *    CPU (bench/http/cpuprofile-summary.mjs) and keeps the profile in bench/http/out/.
 *    --profile-startup: the same for one start on PostgreSQL and one on PGlite, up to /health.
 *
 * The machine may be shared: before each measurement the script waits (up to --wait-quiet s) for
 * the machine to be less than --quiet-busy % busy, and reports how busy it was. The CPU time the
 * server process spends per request (and per start) is reported too: it is much less sensitive to
 * other work on the machine than requests/s and latency.
 *
 * The service's per-merchant rate limit (RATE_LIMIT_RPS, default 20/s) would turn almost every
 * request into a 429, so the benchmark raises it (RATE_LIMIT_RPS/RATE_LIMIT_BURST = 1e9): the
 * limiter still runs on every request, it just never refuses.
 *
 * Results are also written as JSON to bench/http/out/results-<timestamp>.json.
 */
import { execSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createConnection } from "node:net"
import { cpus, freemem, tmpdir, totalmem } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import {
  admin,
  atInterrupt,
  buildIfNeeded,
  cpuMs,
  createDatabase,
  freePort,
  httpOk,
  log,
  machineTicks,
  MAIN,
  pinProcess,
  round,
  serviceEnv,
  sleep,
  START,
  startChild,
  startService,
  waitQuiet as waitQuietFor,
  withAdminClient,
  wrkLoad
} from "../lib/harness.mjs"
import { printSummary, summarise } from "./cpuprofile-summary.mjs"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const HERE = fileURLToPath(new URL("./", import.meta.url))
const OUT = join(HERE, "out")
/** The compiled modules (tsc), one file per source file. */
const TSC_MAIN = join(ROOT, "dist/src/main.js")
const rel = (file) => file.slice(ROOT.length)
const BALANCE_PATH = "/api/v1/merchant/balance"
/** The service's pool size (src/Db/Database.ts: maxConnections). */
const POOL_MAX = 20
const CLK_TCK = 100

// ---- options -------------------------------------------------------------------------------------

const argv = process.argv.slice(2)
const flag = (name) => argv.includes(`--${name}`)
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 && argv[i + 1] !== undefined ? Number(argv[i + 1]) : fallback
}
const opts = {
  connections: option("connections", 50),
  duration: option("duration", 10),
  warmup: option("warmup", 2),
  rounds: option("rounds", 3),
  starts: option("starts", 5),
  /** Before each measurement, wait up to this many seconds for the machine to be quiet. */
  waitQuiet: option("wait-quiet", 60),
  /** Quiet: the whole machine busy below this share (%) over one second. */
  quietBusy: option("quiet-busy", 15),
  load: !flag("no-load"),
  startup: !flag("no-startup"),
  profile: flag("profile"),
  profileStartup: flag("profile-startup"),
  /** How the bare baseline finds the key's merchant: `cache` (as the service) or `joined` (a join per request). */
  bareKeyLookup: flag("bare-joined") ? "joined" : "cache"
}

// ---- helpers -------------------------------------------------------------------------------------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const portAccepts = (port) =>
  new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => {
      socket.destroy()
      resolve(false)
    })
  })

/**
 * Other work on the machine (test suites, builds) skews every figure: wait until the machine is
 * quiet, up to --wait-quiet seconds, and say so if it never was.
 */
const waitQuiet = (what) => waitQuietFor(what, { maxSeconds: opts.waitQuiet, quietBusy: opts.quietBusy })

// ---- the service ---------------------------------------------------------------------------------

const startBare = async (databaseUrl, keyLookup) => {
  const port = await freePort()
  const proc = startChild([join(HERE, "bare-server.mjs")], {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_URL: databaseUrl,
    POOL_MAX: String(POOL_MAX),
    KEY_LOOKUP: keyLookup,
    NODE_ENV: "production"
  }, "bare")
  const deadline = Date.now() + 15_000
  while (!proc.output().includes("listening")) {
    if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(`bare server did not start:\n${proc.output()}`)
    await sleep(20)
  }
  return { ...proc, baseUrl: `http://127.0.0.1:${port}` }
}

// ---- load ----------------------------------------------------------------------------------------

/** The bench's merchant on a service: a legacy address and a funded balance; its API key. */
const benchMerchant = async (target) => {
  const merchant = await admin(target, "/admin/merchants", { name: "bench-merchant", webhook_url: null })
  await admin(target, `/admin/merchants/${merchant.merchant_id}/legacy-addresses`, { trc20: "TBenchLegacyTrc20Address000000000", bep20: null }, "PUT")
  await admin(target, "/admin/deposits", { merchant_id: merchant.merchant_id, network: "tron", amount: 1010.1, tx_id: "bench-initial-funding" })
  return merchant.api_key
}

const fetchBalance = async (baseUrl, apiKey) => {
  const res = await fetch(`${baseUrl}${BALANCE_PATH}`, { headers: { authorization: `Bearer ${apiKey}` } })
  return { status: res.status, contentType: res.headers.get("content-type"), headers: res.headers, body: Buffer.from(await res.arrayBuffer()) }
}

const wrk = (baseUrl, apiKey, seconds) =>
  wrkLoad({ url: `${baseUrl}${BALANCE_PATH}`, headers: { authorization: `Bearer ${apiKey}` }, seconds, connections: opts.connections, core: 1 })

/**
 * Warm-up (discarded), then a measured run of wrk pinned to core 1 against a server pinned to core
 * 0; with the server process's CPU time (all its threads) over the run.
 */
const measure = async (target, label) => {
  const busyBefore = await waitQuiet(label)
  wrk(target.baseUrl, target.apiKey, opts.warmup)
  await sleep(200)
  const cpuBefore = cpuMs(target.child.pid)
  const ticksBefore = machineTicks()
  const result = wrk(target.baseUrl, target.apiKey, opts.duration)
  const cpuAfter = cpuMs(target.child.pid)
  const ticksAfter = machineTicks()
  const machineBusyMs = ((ticksAfter.busy - ticksBefore.busy) * 1000) / CLK_TCK
  return {
    ...result,
    cpuMsPerRequest: (cpuAfter - cpuBefore) / result.requests,
    cpuUtilisation: (cpuAfter - cpuBefore) / (opts.duration * 1000),
    machineBusyBefore: busyBefore,
    /** Cores busy over the run: all, and the server under test. */
    coresBusy: machineBusyMs / (opts.duration * 1000),
    coresServer: (cpuAfter - cpuBefore) / (opts.duration * 1000)
  }
}

const printRun = (label, r) =>
  log(
    `  ${label.padEnd(8)} ${String(round(r.rps)).padStart(7)} req/s  p50 ${String(round(r.p50, 2)).padStart(5)} ms  p99 ${
      String(round(r.p99, 2)).padStart(6)
    } ms` +
      `  cpu ${round(r.cpuMsPerRequest * 1000)} µs/req (${round(r.cpuUtilisation * 100)} % of a core)  non2xx ${r.non2xx}` +
      `\n           cores busy: all ${round(r.coresBusy, 2)} = server ${round(r.coresServer, 2)} + rest (wrk, PostgreSQL, others) ${
        round(r.coresBusy - r.coresServer, 2)
      }; machine ${round(r.machineBusyBefore * 100)} % busy just before`
  )

// ---- start-up ------------------------------------------------------------------------------------

/** Spawn to "API port accepts and ops /health answers 200", in ms; the process is stopped after. */
const timeStart = async ({ databaseUrl, dataDir, nodeArgs = [], entry = MAIN }) => {
  const port = await freePort()
  const opsPort = await freePort()
  const env = serviceEnv({ port, opsPort, databaseUrl, dataDir })
  const t0 = performance.now()
  const proc = startChild([...START.nodeFlags, ...nodeArgs, entry], env, "service")
  let apiAt, healthAt, cpuAtReady, readyAt
  try {
    const deadline = Date.now() + 60_000
    while (apiAt === undefined || healthAt === undefined) {
      if (proc.child.exitCode !== null) throw new Error(`service exited with ${proc.child.exitCode}:\n${proc.output()}`)
      if (Date.now() > deadline) throw new Error(`service did not start in 60 s:\n${proc.output()}`)
      const [api, health] = await Promise.all([
        apiAt === undefined ? portAccepts(port) : true,
        healthAt === undefined ? httpOk(`http://127.0.0.1:${opsPort}/health`) : true
      ])
      const now = performance.now()
      if (api && apiAt === undefined) apiAt = now - t0
      if (health && healthAt === undefined) healthAt = now - t0
      if (apiAt === undefined || healthAt === undefined) await sleep(5)
    }
    cpuAtReady = cpuMs(proc.child.pid)
    readyAt = Number(process.hrtime.bigint() / 1000n)
  } finally {
    const code = await proc.stop()
    if (code !== 0 && code !== "SIGTERM") log(`  (service exited with ${code})`)
  }
  return { ms: Math.max(apiAt, healthAt), apiMs: apiAt, healthMs: healthAt, cpuMs: cpuAtReady, readyAt }
}

const measureStartups = async (label, settings) => {
  const runs = []
  for (let i = 0; i < opts.starts; i++) {
    const busyBefore = await waitQuiet(`${label} start ${i + 1}`)
    const r = { ...(await timeStart(settings)), machineBusyBefore: busyBefore }
    runs.push(r)
    log(`  ${label} start ${i + 1}: ${round(r.ms)} ms (API port ${round(r.apiMs)} ms, /health ${round(r.healthMs)} ms; ${round(r.cpuMs)} ms CPU)`)
    await sleep(300)
  }
  return { medianMs: median(runs.map((r) => r.ms)), medianCpuMs: median(runs.map((r) => r.cpuMs)), runs }
}

// ---- main ----------------------------------------------------------------------------------------

const machine = () => {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8")
  return {
    nproc: Number(execSync("nproc").toString().trim()),
    cpuModel: cpuinfo.match(/model name\s*:\s*(.*)/)?.[1] ?? cpus()[0]?.model,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    freeMemoryGiB: round(freemem() / 2 ** 30, 1),
    node: process.version,
    postgres: undefined
  }
}

const main = async () => {
  const started = new Date()
  const info = machine()
  info.postgres = await withAdminClient((c) => c.query("SHOW server_version")).then((r) => r.rows[0].server_version)
  log(`bench/http ${started.toISOString()}`)
  log(`machine: ${info.nproc} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB, node ${info.node}, PostgreSQL ${info.postgres}`)
  log(`settings: ${JSON.stringify(opts)}`)
  log(`service: node ${rel(MAIN)} (what npm start runs)`)
  buildIfNeeded()

  const git = (cmd) => {
    try {
      return execSync(cmd, { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim()
    } catch {
      return undefined
    }
  }
  const revision = `${git("git rev-parse --short HEAD")}${git("git status --porcelain src migrations") ? " + uncommitted changes in src/" : ""}`
  log(`revision: ${revision}`)
  const results = {
    revision,
    service: rel(MAIN),
    date: started.toISOString(),
    command: `node bench/http/run.mjs ${argv.join(" ")}`.trim(),
    machine: info,
    options: opts
  }
  const db = await createDatabase("mps_bench")
  const tmp = mkdtempSync(join(tmpdir(), "mps-bench-"))
  mkdirSync(OUT, { recursive: true })
  atInterrupt(() => rmSync(tmp, { recursive: true, force: true }))
  log(`database: ${db.name}; temp dir ${tmp}`)
  let service, bare, pglite
  try {
    service = await startService({ databaseUrl: db.url, dataDir: join(tmp, "data-pg") })
    const apiKey = await benchMerchant(service)
    service.apiKey = apiKey

    if (opts.load || opts.profile) {
      bare = await startBare(db.url, opts.bareKeyLookup)
      log(`bare baseline finds the key's merchant by: ${opts.bareKeyLookup}`)
      const a = await fetchBalance(service.baseUrl, apiKey)
      const b = await fetchBalance(bare.baseUrl, apiKey)
      log(`\nservice: ${a.status} ${a.contentType} ${a.body.toString()}`)
      log(`bare:    ${b.status} ${b.contentType} ${b.body.toString()}`)
      if (a.status !== 200 || b.status !== 200 || a.contentType !== b.contentType || !a.body.equals(b.body)) {
        throw new Error("the service and the bare baseline do not answer with the same bytes")
      }
      log(`bodies are byte-identical (${a.body.length} bytes), content-type identical`)
      const extra = [...a.headers.keys()].filter((h) => !b.headers.has(h))
      log(`headers only the service sends: ${extra.join(", ") || "none"}`)
      results.body = a.body.toString()
      results.serviceOnlyHeaders = extra
    }

    if (opts.load) {
      // every server under load on core 0 (worker threads too), wrk on core 1
      pinProcess(service.child.pid, 0)
      pinProcess(bare.child.pid, 0)
      bare.apiKey = apiKey
      pglite = await startService({ databaseUrl: undefined, dataDir: join(tmp, "data-pglite-load") })
      pglite.apiKey = await benchMerchant(pglite)
      pinProcess(pglite.child.pid, 0)
      const targets = { service, bare, pglite }
      log(`\nload: wrk -t1 -c${opts.connections}, ${opts.warmup} s warm-up + ${opts.duration} s measured, ${opts.rounds} rounds (alternating)`)
      const runs = { service: [], bare: [], pglite: [] }
      for (let i = 0; i < opts.rounds; i++) {
        const order = i % 2 === 0 ? ["service", "bare", "pglite"] : ["pglite", "bare", "service"]
        log(`round ${i + 1}`)
        for (const which of order) {
          const r = await measure(targets[which], which)
          if (r.non2xx > 0) log(`  WARNING: ${which} had ${r.non2xx} answers other than 2xx or 3xx`)
          runs[which].push(r)
          printRun(which, r)
        }
      }
      const agg = (rs) => ({
        rps: median(rs.map((r) => r.rps)),
        p99: median(rs.map((r) => r.p99)),
        p50: median(rs.map((r) => r.p50)),
        cpuMsPerRequest: median(rs.map((r) => r.cpuMsPerRequest))
      })
      const [s, b, l] = [agg(runs.service), agg(runs.bare), agg(runs.pglite)]
      const ratio = s.rps / b.rps
      results.load = { runs, service: s, bare: b, pglite: l, ratio, cpuRatio: b.cpuMsPerRequest / s.cpuMsPerRequest, pgliteRatio: l.rps / s.rps }
      log(`\n  medians       req/s    p50 ms   p99 ms   CPU µs/req`)
      for (const [label, x] of [["service", s], ["bare", b], ["pglite", l]]) {
        log(
          `  ${label.padEnd(8)}  ${String(round(x.rps)).padStart(8)}  ${String(round(x.p50, 2)).padStart(7)}  ${String(round(x.p99, 2)).padStart(7)}  ${
            String(round(x.cpuMsPerRequest * 1000)).padStart(9)
          }`
        )
      }
      log(`  ratio service/bare (PostgreSQL): ${round(ratio, 3)} (target >= 0.5) -> ${ratio >= 0.5 ? "MET" : "NOT MET"}`)
      log(`  CPU per request, bare/service: ${round(results.load.cpuRatio, 3)}`)
      log(`  PGlite / PostgreSQL service: ${round(results.load.pgliteRatio, 3)} (target >= 0.5) -> ${results.load.pgliteRatio >= 0.5 ? "MET" : "NOT MET"}`)
    }

    for (const proc of [bare, pglite, service]) if (proc !== undefined) await proc.stop()
    bare = pglite = service = undefined

    if (opts.profile) {
      const dir = join(OUT, `profile-${started.toISOString().replace(/[:.]/g, "-")}`)
      mkdirSync(dir, { recursive: true })
      log(`\nprofile: service under node --cpu-prof, same load (${opts.warmup} s + ${opts.duration} s)`)
      const profiled = await startService({ databaseUrl: db.url, dataDir: join(tmp, "data-pg"), nodeArgs: ["--cpu-prof", "--cpu-prof-dir", dir] })
      const r = await measure(profiled, apiKey)
      printRun("service", r)
      await profiled.stop()
      const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
      if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`)
      const summary = summarise(JSON.parse(readFileSync(join(dir, file), "utf8")), { top: 30, ...r.window })
      log(`profile: ${join(dir, file)} (summary of the measured ${opts.duration} s only)`)
      printSummary(summary, log)
      results.profile = { file: join(dir, file), run: r, summary }
    }

    if (opts.profileStartup) {
      const liteDir = join(tmp, "data-pglite-profile")
      const init = await startService({ databaseUrl: undefined, dataDir: liteDir })
      await init.stop()
      results.startupProfile = {}
      for (const [label, databaseUrl, dataDir] of [["PostgreSQL", db.url, join(tmp, "data-pg")], ["PGlite", undefined, liteDir]]) {
        const dir = join(OUT, `startup-profile-${label}-${started.toISOString().replace(/[:.]/g, "-")}`)
        mkdirSync(dir, { recursive: true })
        log(`\nstart-up profile (${label}): node --cpu-prof ${rel(MAIN)}, until /health answers`)
        const r = await timeStart({ databaseUrl, dataDir, nodeArgs: ["--cpu-prof", "--cpu-prof-dir", dir] })
        log(`  ${round(r.ms)} ms (${round(r.cpuMs)} ms CPU) under the profiler`)
        const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
        const summary = summarise(JSON.parse(readFileSync(join(dir, file), "utf8")), { top: 25, to: r.readyAt })
        log(`profile: ${join(dir, file)} (up to /health answering)`)
        printSummary(summary, log)
        results.startupProfile[label] = { file: join(dir, file), run: r, summary }
      }
    }

    if (opts.startup) {
      // what `npm start` runs, and the compiled modules (tsc) if that is something else
      results.startup = {}
      const entries = [...new Set([MAIN, TSC_MAIN])].filter((f) => existsSync(f))
      const liteDir = join(tmp, "data-pglite")
      log(`\n  PGlite: initialising ${liteDir} (first start, not measured)`)
      const init = await startService({ databaseUrl: undefined, dataDir: liteDir })
      await init.stop()
      for (const entry of entries) {
        log(`\nstart-up of node ${rel(entry)}${entry === MAIN ? " (npm start)" : ""}: spawn -> API port accepts and /health answers; median of ${opts.starts}`)
        const pgStart = await measureStartups("PostgreSQL", { databaseUrl: db.url, dataDir: join(tmp, "data-pg"), entry })
        log(`  PostgreSQL median: ${round(pgStart.medianMs)} ms (target < 1500 ms); CPU ${round(pgStart.medianCpuMs)} ms`)
        const liteStart = await measureStartups("PGlite", { databaseUrl: undefined, dataDir: liteDir, entry })
        log(`  PGlite median: ${round(liteStart.medianMs)} ms (target < 1500 ms); CPU ${round(liteStart.medianCpuMs)} ms`)
        results.startup[rel(entry)] = { npmStart: entry === MAIN, postgresql: pgStart, pglite: liteStart }
      }
    }
  } finally {
    for (const proc of [bare, pglite, service]) if (proc !== undefined) await proc.stop()
    await db.drop().catch((e) => log(`could not drop ${db.name}: ${e.message}`))
    rmSync(tmp, { recursive: true, force: true })
  }
  const file = join(OUT, `results-${started.toISOString().replace(/[:.]/g, "-")}.json`)
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n")
  log(`\nresults: ${file}`)
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
