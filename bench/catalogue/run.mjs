/**
 * bench/catalogue: the catalogue at scale, against the issue's targets.
 *
 *   node bench/catalogue/run.mjs [--http-sizes 100000,1000000] [--dump-sizes 1000000,2500000]
 *        [--connections 50] [--duration 10] [--warmup 2] [--rounds 2]
 *        [--sync-populate-max 100000] [--dump-interval 10] [--dump-regens 3] [--probe-ms 10]
 *        [--large-heap-from 1500000] [--large-heap-mb 8192] [--profile] [--profile-size 1000000]
 *        [--initial-sync-only N] [--pglite] [--wait-quiet 60] [--quiet-busy 25]
 *
 * 1. A fresh database mps_bench_cat_<pid> on BENCH_PG_URL's server (postgres://postgres@127.0.0.1:5432
 *    by default), dropped at the end. A first start of the service with SIM_CATALOGUE_SIZE=0
 *    applies the migrations, creates the merchant (admin API) and gives the memory baseline.
 * 2. For each size, ascending, the database is brought to that many items: by the service's own
 *    supplier sync (start with SIM_CATALOGUE_SIZE=N: the sync leader reconciles the synthetic
 *    catalogue into PostgreSQL through the change log, 2,000 items a statement; measured as
 *    "sync") up to --sync-populate-max, beyond it by COPY of the same rows (seed.mjs: the same
 *    synthetic listings, seed 730, item column = serialise(item)).
 * 3. HTTP sizes: a start on the populated database (it leads the sync: its reconcile must report
 *    changes: 0, which checks the seeded rows), load time (spawn -> "catalogue loaded"), resident
 *    size after load and the first dump; then a second start without --inspect (the inspector
 *    slows V8's collections: the latency figures would be the inspector's), and /items/search, a
 *    filtered /items page and the gzip full dump (4 connections) under
 *    `wrk -t1 -c50` pinned to core 1 (both servers pinned to core 0), alternating with a bare
 *    `node:http` server (bare-server.mjs, child process) that replays the service's own response
 *    bytes for the same URLs; ratios of the medians of the rounds. Churn 0, dump interval 1 h.
 * 4. Dump sizes: a start while this script holds the sync leader's advisory lock (the service is a
 *    follower: no reconcile competes), DUMP_INTERVAL_SECONDS = --dump-interval; the regenerations
 *    after the first are measured: the "catalogue dump built" log (millis, gzip_bytes, json_bytes),
 *    the worst latency of GET /health on the ops port probed every --probe-ms ms from here, and the
 *    service's own event-loop delay (prom-client's monitorEventLoopDelay max, from /metrics scraped
 *    every second; each scrape resets it) over each regeneration.
 * 5. --profile: one more start at --profile-size under `node --cpu-prof`: where the load at start,
 *    a dump regeneration and each HTTP load spend CPU (bench/http/cpuprofile-summary.mjs).
 *
 * --initial-sync-only N: only the initial sync of N items into an empty database (its own
 * database), timed to "catalogue reconciled" and to /ready.
 * --pglite: only the HTTP sizes, on the embedded database (PGlite) instead of PostgreSQL.
 *
 * Results are printed and written as JSON to bench/catalogue/out/results-<timestamp>.json.
 *
 * The parts: the service as started here (service.mjs), its database (database.mjs), populating a
 * size (populate.mjs), each size's steps (size.mjs), the HTTP load against the bare server
 * (http.mjs), the dump regeneration (dump.mjs, probes.mjs), the profile (profile.mjs), the summary
 * (summary.mjs), and the two other runs (initial-sync.mjs, pglite.mjs).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PG_SERVER_URL } from "../lib/harness.mjs"
import { createDatabase } from "./database.mjs"
import { ENDPOINTS } from "./http.mjs"
import { initialSyncOnly } from "./initial-sync.mjs"
import { buildIfNeeded, HERE, log, machine, snapshotBuild } from "./lib.mjs"
import { pgliteHttp } from "./pglite.mjs"
import { useBuild } from "./seed.mjs"
import { baselineRun, sizeRun } from "./size.mjs"
import { printSummary } from "./summary.mjs"

// ---- options -------------------------------------------------------------------------------------

const argv = process.argv.slice(2)
const flag = (name) => argv.includes(`--${name}`)
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback
}
const numbers = (name, fallback) => String(option(name, fallback)).split(",").filter((s) => s.trim() !== "").map(Number)
const opts = {
  httpSizes: numbers("http-sizes", "100000,1000000"),
  dumpSizes: numbers("dump-sizes", "1000000,2500000"),
  connections: Number(option("connections", 50)),
  duration: Number(option("duration", 10)),
  warmup: Number(option("warmup", 2)),
  rounds: Number(option("rounds", 2)),
  syncPopulateMax: Number(option("sync-populate-max", 100000)),
  /**
   * HTTP starts lead the sync (and so reconcile at start, which must report changes: 0) up to
   * this size; above it they follow (this script holds the leader lock): the reconcile at start
   * regenerates the whole synthetic catalogue in one go (see the report) and would take minutes.
   */
  leaderMax: Number(option("leader-max", 100000)),
  dumpInterval: Number(option("dump-interval", 10)),
  dumpRegens: Number(option("dump-regens", 3)),
  /** After the regenerations: this many price changes written to the change log, then one more build (0: none). */
  dumpChanges: Number(option("dump-changes", 0)),
  probeMs: Number(option("probe-ms", 10)),
  settleSeconds: Number(option("settle", 5)),
  largeHeapFrom: Number(option("large-heap-from", 1500000)),
  largeHeapMb: Number(option("large-heap-mb", 8192)),
  profile: flag("profile"),
  profileSize: Number(option("profile-size", 1000000)),
  initialSyncOnly: Number(option("initial-sync-only", 0)),
  waitQuiet: Number(option("wait-quiet", 60)),
  quietBusy: Number(option("quiet-busy", 25)),
  keepDb: flag("keep-db"),
  /** The HTTP sizes on the embedded database instead (a fresh DATA_DIR each, filled by the service's own sync). */
  pglite: flag("pglite"),
  /** An existing database of an earlier (killed or --keep-db) run: its merchant and items are reused. */
  db: option("db", undefined),
  /** Extra environment of every service start, KEY=VALUE,... (e.g. glibc malloc tunables). */
  serviceEnv: Object.fromEntries(
    String(option("service-env", "")).split(",").filter((kv) => kv.includes("=")).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])
  )
}

/**
 * What every part of the run reads: the options and the command line, where results go, the build
 * measured (a snapshot of dist/src: lib.mjs snapshotBuild), and where each service start's whole
 * output is written (a numbered file per start).
 */
const bench = { opts, argv, out: join(HERE, "out"), build: undefined, logs: join(HERE, "out"), serviceStarts: 0 }
const OUT = bench.out

const main = async () => {
  const started = new Date()
  const info = await machine(PG_SERVER_URL)
  log(`bench/catalogue ${started.toISOString()}`)
  log(`machine: ${info.nproc} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB (${info.freeMemoryGiB} free), node ${info.node}, PostgreSQL ${info.postgres}`)
  log(`settings: ${JSON.stringify(opts)}`)
  buildIfNeeded()
  mkdirSync(OUT, { recursive: true })
  const BUILD = snapshotBuild(join(OUT, `build-${started.toISOString().replace(/[:.]/g, "-")}`))
  bench.build = BUILD
  await useBuild(BUILD.distSrc)
  log(`build: commit ${BUILD.commit}${BUILD.dirty ? " + uncommitted changes in src/" : ""} (${BUILD.subject}); measuring the copy in ${BUILD.dir}`)
  const fileOf = () => join(OUT, `results-${started.toISOString().replace(/[:.]/g, "-")}.json`)
  bench.logs = join(OUT, `logs-${started.toISOString().replace(/[:.]/g, "-")}`)
  mkdirSync(bench.logs, { recursive: true })
  log(`service logs: ${bench.logs}`)
  if (opts.initialSyncOnly > 0 || opts.pglite) {
    const results = opts.pglite ? await pgliteHttp(bench, started, info) : await initialSyncOnly(bench, started, info)
    writeFileSync(fileOf(), JSON.stringify(results, null, 2) + "\n")
    return log(`\nresults: ${fileOf()}`)
  }

  const results = {
    date: started.toISOString(),
    command: `node bench/catalogue/run.mjs ${argv.join(" ")}`.trim(),
    machine: info,
    build: BUILD,
    options: opts,
    endpoints: ENDPOINTS,
    sizes: {}
  }
  const save = () => writeFileSync(fileOf(), JSON.stringify(results, null, 2) + "\n")
  const db = await createDatabase("", opts.db)
  const tmp = mkdtempSync(join(tmpdir(), "mps-bench-cat-"))
  const cleanup = async () => {
    rmSync(tmp, { recursive: true, force: true })
    if (!opts.keepDb) await db.drop().catch((e) => log(`could not drop ${db.name}: ${e.message}`))
  }
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      cleanup().finally(() => process.exit(130))
    })
  }
  log(`database: ${db.name}; temp dir ${tmp}`)
  try {
    const { populated, apiKey, baseline } = await baselineRun(bench, { db, tmp })
    results.baseline = baseline
    save()

    const sizes = [...new Set([...opts.httpSizes, ...opts.dumpSizes, ...(opts.profile ? [opts.profileSize] : [])])].sort((a, b) => a - b)
    const state = { db, tmp, save, started, populated, apiKey }
    for (const size of sizes) {
      results.sizes[size] = {}
      await sizeRun(bench, state, size, results.sizes[size])
    }

    printSummary(results, sizes)
    save()
  } finally {
    await cleanup()
  }
  log(`\nresults: ${fileOf()}`)
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
