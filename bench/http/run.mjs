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
 * The parts: the bare baseline (baseline.mjs), the load (load.mjs), the start-up (startup.mjs).
 */
import { execSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { atInterrupt, buildIfNeeded, createDatabase, log, machineInfo, MAIN, ROOT, startService } from "../lib/harness.mjs"
import { startCheckedBare } from "./baseline.mjs"
import { benchMerchant, loadRounds, profileLoad } from "./load.mjs"
import { measureStartupTimes, profileStartups, rel } from "./startup.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const OUT = join(HERE, "out")

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

const main = async () => {
  const started = new Date()
  const stamp = started.toISOString().replace(/[:.]/g, "-")
  // the results record the revision beside the service measured, not in the machine
  const info = await machineInfo()
  delete info.revision
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
      const checked = await startCheckedBare(opts, db.url, service, apiKey)
      bare = checked.bare
      results.body = checked.body
      results.serviceOnlyHeaders = checked.serviceOnlyHeaders
    }

    if (opts.load) {
      bare.apiKey = apiKey
      pglite = await startService({ databaseUrl: undefined, dataDir: join(tmp, "data-pglite-load") })
      pglite.apiKey = await benchMerchant(pglite)
      results.load = await loadRounds(opts, { service, bare, pglite })
    }

    for (const proc of [bare, pglite, service]) if (proc !== undefined) await proc.stop()
    bare = pglite = service = undefined

    if (opts.profile) {
      results.profile = await profileLoad(opts, { databaseUrl: db.url, dataDir: join(tmp, "data-pg"), apiKey, dir: join(OUT, `profile-${stamp}`) })
    }
    if (opts.profileStartup) results.startupProfile = await profileStartups({ db, tmp, out: OUT, stamp })
    if (opts.startup) results.startup = await measureStartupTimes(opts, { db, tmp })
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
