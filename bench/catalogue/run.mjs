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
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { Agent, request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gunzipSync } from "node:zlib"
import pg from "pg"
import { printSummary, summarise } from "../http/cpuprofile-summary.mjs"
import { pinProcess, START, wrkLoad } from "../lib/harness.mjs"
import {
  buildIfNeeded,
  cpuMs,
  freePort,
  gcAndMeasure,
  HERE,
  httpOk,
  log,
  machine,
  machineTicks,
  median,
  memoryOf,
  mib,
  parseMetrics,
  round,
  schedstat,
  sleep,
  snapshotBuild,
  startChild,
  waitQuiet as waitQuietFor
} from "./lib.mjs"
import { seedItems, useBuild, verifyAgainstSync } from "./seed.mjs"

const OUT = join(HERE, "out")
/** The build measured: a snapshot of dist/src (lib.mjs snapshotBuild). */
let BUILD
/** Every service start's whole output goes to a file here. */
let LOGS = OUT
let serviceStarts = 0
const ADMIN_TOKEN = "adm_bench_token_0123456789abcdef"
const API = "/api/v1/merchant"
const PG_SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
/** the sync leader's advisory lock key (src/Catalogue/Repo.ts) */
const LEADER_LOCK_KEY = 7_311_002

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
 * The search and the filtered page measured (the search by the most common name of the data), and
 * the full dump as gzip over 4 connections (issue 26's method for the dump).
 */
const SEARCH_NAME = "AK-47 | Redline (Field-Tested)"
const ENDPOINTS = [
  { key: "search", path: `${API}/items/search?market_hash_name=${encodeURIComponent(SEARCH_NAME)}&max_price=500&limit=10` },
  { key: "items", path: `${API}/items?category=rifle&exterior=Field-Tested&min_price=5&max_price=50&delivery_type=instant&limit=50` },
  { key: "dump", path: `${API}/items/full-dump`, headers: { "accept-encoding": "gzip" }, connections: 4 }
]

const waitQuiet = (what, ownPids) => waitQuietFor(what, { seconds: opts.waitQuiet, quietBusy: opts.quietBusy, ownPids })
const fmtS = (ms) => `${round(ms / 1000, 1)} s`

// ---- database ------------------------------------------------------------------------------------

const withClient = async (url, f) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

const createDatabase = async (suffix = "", existing = undefined) => {
  const name = existing ?? `mps_bench_cat_${process.pid}${suffix}`
  if (existing === undefined) {
    await withClient(PG_SERVER_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => c.query(`CREATE DATABASE ${name}`)))
  }
  const url = new URL(PG_SERVER_URL)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: () => withClient(PG_SERVER_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  }
}

/** Holds the sync leader's advisory lock, so a service started meanwhile only follows. */
const holdLeaderLock = async (url) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query("SELECT pg_advisory_lock($1)", [LEADER_LOCK_KEY])
  return { release: () => client.end() }
}

// ---- the service ---------------------------------------------------------------------------------

const serviceEnv = ({ port, opsPort, databaseUrl, dataDir, size, dumpInterval, nodeOptions }) => {
  const env = {
    ...process.env,
    PORT: String(port),
    OPS_PORT: String(opsPort),
    HOST: "127.0.0.1",
    OPS_HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
    ADMIN_TOKEN,
    DEMO_MERCHANT: "false",
    LOG_LEVEL: "info",
    RATE_LIMIT_RPS: "1000000000",
    RATE_LIMIT_BURST: "1000000000",
    SIM_CATALOGUE_SIZE: String(size),
    SIM_CHURN_PER_SECOND: "0",
    DUMP_INTERVAL_SECONDS: String(dumpInterval),
    NODE_ENV: "production"
  }
  Object.assign(env, opts.serviceEnv)
  delete env.SIM_CATALOGUE
  if (databaseUrl === undefined) delete env.DATABASE_URL
  delete env.NODE_OPTIONS
  if (nodeOptions) env.NODE_OPTIONS = nodeOptions
  return env
}

const messageOf = (e) => (Array.isArray(e.message) ? e.message[0] : e.message)

/**
 * Starts `node [nodeArgs] dist/src/main.js` with SIM_CATALOGUE_SIZE = size and waits until /ready
 * answers 200 (index loaded, synced once), then for the first dump, built after /ready. Times from
 * the spawn.
 */
const startService = async ({ db, tmp, size, dumpInterval = 3600, nodeArgs = [], inspect = true, readyTimeoutMs = 1_800_000, label = "service" }) => {
  const port = await freePort()
  const opsPort = await freePort()
  const nodeOptions = size >= opts.largeHeapFrom ? `--max-old-space-size=${opts.largeHeapMb}` : undefined
  const env = serviceEnv({ port, opsPort, databaseUrl: db.url, dataDir: join(tmp, "data"), size, dumpInterval, nodeOptions })
  // --inspect: for a forced GC and exact memory figures (lib.mjs gcAndMeasure); idle otherwise
  // with npm start's node flags (the V8 settings the service ships with)
  const proc = startChild(process.execPath, [...START.nodeFlags, ...(inspect ? ["--inspect=127.0.0.1:0"] : []), ...nodeArgs, BUILD.main], {
    env,
    label,
    logFile: join(LOGS, `${String(++serviceStarts).padStart(2, "0")}-${label}.log`)
  })
  const opsUrl = `http://127.0.0.1:${opsPort}`
  const loaded = await proc.waitLog("catalogue loaded", { timeoutMs: readyTimeoutMs })
  const deadline = Date.now() + readyTimeoutMs
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`service exited with ${proc.child.exitCode}:\n${proc.output().slice(-4000)}`)
    if (Date.now() > deadline) {
      await proc.stop()
      throw new Error(`service did not become ready:\n${proc.output().slice(-4000)}`)
    }
    if (await httpOk(`${opsUrl}/ready`)) break
    await sleep(100)
  }
  const readyAt = Date.now()
  // the rounds and the memory figures come after it, as they did when /ready waited for it
  const firstDump = (await proc.waitLog("catalogue dump built", { timeoutMs: readyTimeoutMs })).event
  return {
    ...proc,
    size,
    nodeOptions,
    baseUrl: `http://127.0.0.1:${port}`,
    opsUrl,
    start: {
      loadedItems: loaded.event.annotations.items,
      /** spawn -> "catalogue loaded" (node start, imports, migrations check, the paged load) */
      loadMs: loaded.event.at - proc.spawnedAt,
      readyMs: readyAt - proc.spawnedAt,
      cpuMsAtReady: cpuMs(proc.pid),
      firstDump: dumpOf(firstDump)
    }
  }
}

/**
 * Price changes of one cent (`delta` +1 or -1) to `n` random active items, or to the given ids,
 * written as ChangeLog.apply writes an upsert: the item row and its JSON (the price field
 * replaced), the log rows at the head, the notification; one transaction. Returns the ids.
 */
const writePriceChanges = (url, { n, ids, delta }) =>
  withClient(url, async (c) => {
    const picked = ids === undefined
      ? `SELECT id FROM catalogue_items WHERE status = 'active' ORDER BY random() LIMIT ${Number(n)}`
      : `SELECT unnest($1::uuid[]) AS id`
    const result = await c.query(
      `
    WITH picked AS (${picked}),
    changed AS (
      UPDATE catalogue_items c SET price_cents = c.price_cents + (${Number(delta)}), updated_at = now(),
        item = regexp_replace(c.item, '"price":[0-9.]+', '"price":' || trim_scale((c.price_cents + (${Number(delta)}))::numeric / 100)::text)
      FROM picked WHERE c.id = picked.id RETURNING c.id, c.item),
    numbered AS (SELECT id, item, row_number() OVER () AS k FROM changed),
    head AS (UPDATE catalogue_state SET head_seq = head_seq + (SELECT count(*) FROM numbered) RETURNING epoch, head_seq),
    logged AS (
      INSERT INTO catalogue_changes (seq, epoch, op, item_id, item)
      SELECT head.head_seq - (SELECT count(*) FROM numbered) + numbered.k, head.epoch, 'upsert', numbered.id, numbered.item
      FROM numbered, head)
    SELECT numbered.id::text AS id, pg_notify('catalogue_changes', head.head_seq::text) FROM numbered, head`,
      ids === undefined ? [] : [ids]
    )
    return result.rows.map((r) => r.id)
  })

const dumpOf = (e) => ({
  items: e.annotations.items,
  pieces: Number(e.annotations.pieces),
  piecesReused: Number(e.annotations.pieces_reused),
  millis: Number(e.annotations.millis),
  gzipBytes: Number(e.annotations.gzip_bytes),
  jsonBytes: Number(e.annotations.json_bytes),
  endAt: e.at,
  startAt: e.at - Number(e.annotations.millis)
})

/** The sync leader's "catalogue reconciled" line and its duration from "this process leads". */
const reconcileOf = async (service, timeoutMs = 3_600_000) => {
  const { event } = await service.waitLog("catalogue reconciled with the supplier", { timeoutMs })
  const leads = service.events.find((e) => messageOf(e) === "supplier sync: this process leads")
  return {
    listings: event.annotations.listings,
    changes: event.annotations.changes,
    ms: leads ? event.at - leads.at : undefined,
    fromSpawnMs: event.at - service.spawnedAt
  }
}

const admin = async (service, path, body, method = "POST") => {
  const res = await fetch(`${service.opsUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return JSON.parse(text)
}

const scrape = async (service) => {
  const res = await fetch(`${service.opsUrl}/metrics`)
  return parseMetrics(await res.text())
}

/** After a forced full GC: resident size (/proc), V8 heap and external memory (in the process). */
const memorySnapshot = (service) => gcAndMeasure(service)

/** Resident size (/proc) and the V8 heap / external memory (/metrics) of the service now, no GC. */
const memoryNow = async (service) => {
  const m = await scrape(service)
  const { rss, hwm } = memoryOf(service.pid)
  return {
    rss,
    hwm,
    heapUsed: m.get("nodejs_heap_size_used_bytes"),
    heapTotal: m.get("nodejs_heap_size_total_bytes"),
    external: m.get("nodejs_external_memory_bytes"),
    oldSpaceUsed: m.get("nodejs_heap_space_size_used_bytes{space=\"old\"}"),
    largeObjectSpaceUsed: m.get("nodejs_heap_space_size_used_bytes{space=\"large_object\"}")
  }
}

const printMemory = (label, m) =>
  log(
    `  ${label}${m.gcMs !== undefined ? ` (after a forced full GC, ${round(m.gcMs)} ms)` : ""}: RSS ${mib(m.rss)} MiB (peak so far ${mib(m.hwm)} MiB);` +
      ` V8 heap used ${mib(m.heapUsed)} MiB of ${mib(m.heapTotal)} MiB` +
      (m.spaces ? ` (old ${mib(m.spaces.old_space)}, large objects ${mib(m.spaces.large_object_space)}, new ${mib(m.spaces.new_space)})` : "") +
      `, external ${mib(m.external)} MiB (array buffers ${mib(m.arrayBuffers)} MiB)`
  )

// ---- HTTP load -----------------------------------------------------------------------------------

const startBare = async (responsesFile) => {
  const port = await freePort()
  const proc = startChild(process.execPath, [join(HERE, "bare-server.mjs")], {
    env: { ...process.env, NODE_OPTIONS: "", PORT: String(port), HOST: "127.0.0.1", RESPONSES: responsesFile, NODE_ENV: "production" },
    label: "bare"
  })
  const deadline = Date.now() + 15_000
  while (!proc.output().includes("listening")) {
    if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(`bare server did not start:\n${proc.output()}`)
    await sleep(20)
  }
  return { ...proc, baseUrl: `http://127.0.0.1:${port}` }
}

/** One GET, its body as sent (not decompressed: the dump's gzip bytes are what is compared). */
const fetchOnce = (url, apiKey, headers = {}) =>
  new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${apiKey}`, ...headers } }, (res) => {
      const chunks = []
      res.on("data", (chunk) => chunks.push(chunk))
      res.on("end", () =>
        resolve({
          status: res.statusCode,
          contentType: res.headers["content-type"],
          contentEncoding: res.headers["content-encoding"],
          headers: new Map(Object.entries(res.headers)),
          body: Buffer.concat(chunks)
        }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })

const load = (url, apiKey, seconds, endpoint) =>
  wrkLoad({
    url,
    headers: { authorization: `Bearer ${apiKey}`, ...endpoint.headers },
    seconds,
    connections: endpoint.connections ?? opts.connections,
    core: 1
  })

/**
 * Warm-up (discarded), then a measured run of wrk pinned to core 1 (the server is pinned to core
 * 0); with the server process's CPU time (all its threads) over the run.
 */
const measure = async (target, endpoint, apiKey, ownPids, { quiet = true } = {}) => {
  const path = endpoint.path
  const busyBefore = quiet ? await waitQuiet(`${target.label} ${path.split("?")[0]}`, ownPids) : NaN
  load(target.baseUrl + path, apiKey, opts.warmup, endpoint)
  await sleep(200)
  const from = Number(process.hrtime.bigint() / 1000n)
  const cpuBefore = cpuMs(target.pid)
  const result = load(target.baseUrl + path, apiKey, opts.duration, endpoint)
  const cpuAfter = cpuMs(target.pid)
  const to = Number(process.hrtime.bigint() / 1000n)
  return {
    window: { from, to },
    ...result,
    cpuUsPerRequest: ((cpuAfter - cpuBefore) * 1000) / result.requests,
    coresServer: (cpuAfter - cpuBefore) / (opts.duration * 1000),
    othersBusyBefore: busyBefore
  }
}

const printRun = (label, r) =>
  log(
    `    ${label.padEnd(8)} ${String(round(r.rps)).padStart(7)} req/s  p50 ${String(round(r.p50, 2)).padStart(5)} ms  p99 ${
      String(round(r.p99, 2)).padStart(6)
    } ms` +
      `  server ${round(r.cpuUsPerRequest)} µs CPU/req (${round(r.coresServer, 2)} cores)  non2xx ${r.non2xx}` +
      (r.othersBusyBefore * 100 >= opts.quietBusy ? `  [others ${round(r.othersBusyBefore * 100)} % busy before]` : "")
  )

const httpBench = async (service, apiKey, tmp) => {
  const responses = {}
  const shapes = {}
  for (const e of ENDPOINTS) {
    const r = await fetchOnce(service.baseUrl + e.path, apiKey, e.headers)
    if (r.status !== 200) throw new Error(`${e.path}: ${r.status} ${r.body.toString().slice(0, 500)}`)
    const parsed = JSON.parse(r.contentEncoding === "gzip" ? gunzipSync(r.body).toString() : r.body.toString())
    const count = (parsed.results ?? parsed.items).length
    responses[e.path] = { status: r.status, contentType: r.contentType, contentEncoding: r.contentEncoding, body: r.body.toString("base64") }
    shapes[e.key] = { bytes: r.body.length, items: count, contentType: r.contentType, serviceHeaders: [...r.headers.keys()] }
    log(`  ${e.key}: GET ${e.path} -> ${r.status}, ${count} items, ${r.body.length} bytes`)
  }
  const file = join(tmp, `responses-${service.size}.json`)
  writeFileSync(file, JSON.stringify(responses))
  const bare = await startBare(file)
  try {
    for (const e of ENDPOINTS) {
      const a = await fetchOnce(service.baseUrl + e.path, apiKey, e.headers)
      const b = await fetchOnce(bare.baseUrl + e.path, apiKey, e.headers)
      if (!a.body.equals(b.body) || a.contentType !== b.contentType || a.contentEncoding !== b.contentEncoding) {
        throw new Error(`${e.key}: the bare server does not answer the service's bytes`)
      }
      shapes[e.key].serviceOnlyHeaders = [...a.headers.keys()].filter((h) => !b.headers.has(h))
    }
    log(`  bare baseline answers byte-identical bodies; headers only the service sends: ${shapes.search.serviceOnlyHeaders.join(", ")}`)
    log(`  load: ${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.duration} s, ${opts.rounds} rounds alternating`)
    const out = {}
    const own = [service.pid, bare.pid]
    // every server under load on core 0 (worker threads too), wrk on core 1
    for (const pid of own) pinProcess(pid, 0)
    for (const e of ENDPOINTS) {
      log(`  ${e.key}`)
      const runs = { service: [], bare: [] }
      for (let i = 0; i < opts.rounds; i++) {
        for (const which of i % 2 === 0 ? ["service", "bare"] : ["bare", "service"]) {
          const r = await measure(which === "service" ? service : bare, e, apiKey, own)
          if (r.non2xx > 0) log(`    WARNING: ${which} had ${r.non2xx} answers other than 2xx or 3xx`)
          runs[which].push(r)
          printRun(which, r)
        }
      }
      // the ratio of the medians of the rounds
      const agg = (rs) => ({
        rps: median(rs.map((r) => r.rps)),
        p50: median(rs.map((r) => r.p50)),
        p99: median(rs.map((r) => r.p99)),
        cpuUsPerRequest: median(rs.map((r) => r.cpuUsPerRequest))
      })
      const s = agg(runs.service)
      const b = agg(runs.bare)
      out[e.key] = { path: e.path, ...shapes[e.key], runs, service: s, bare: b, ratio: s.rps / b.rps }
      log(
        `    => service ${round(s.rps)} req/s p99 ${round(s.p99, 1)} ms | bare ${round(b.rps)} req/s p99 ${round(b.p99, 1)} ms | ratio ${
          round(s.rps / b.rps, 3)
        } (target >= 0.6: ${s.rps / b.rps >= 0.6 ? "MET" : "NOT MET"}); CPU per request ${round(s.cpuUsPerRequest)} against ${round(b.cpuUsPerRequest)} µs`
      )
    }
    return out
  } finally {
    await bare.stop()
  }
}

// ---- dump regeneration ---------------------------------------------------------------------------

/**
 * From now until stopped: GET /health on the ops port every `everyMs` (one keep-alive connection,
 * never two at once, so a stall shows as one long request), and /metrics every second (event-loop
 * delay max since the previous scrape, GC time, memory).
 */
const startProbes = (service, everyMs) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const url = new URL(`${service.opsUrl}/health`)
  const probes = []
  const scrapes = []
  let inFlight = false
  let stopped = false
  const now = () => performance.timeOrigin + performance.now()
  let expected = now() + everyMs
  let worstTimerLateness = 0
  const tick = setInterval(() => {
    const t = now()
    worstTimerLateness = Math.max(worstTimerLateness, t - expected)
    expected = t + everyMs
    if (inFlight || stopped) return
    inFlight = true
    const sentAt = now()
    // the service's main thread's CPU time while this probe waited: on a machine shared with other
    // work, how long the event loop was busy (code, GC) as opposed to waiting for a CPU
    const cpuAtSend = schedstat(service.pid)
    const done = (status) => {
      const cpuAtEnd = schedstat(service.pid)
      probes.push({
        sentAt,
        ms: now() - sentAt,
        status,
        cpuMs: cpuAtSend && cpuAtEnd ? cpuAtEnd.cpuMs - cpuAtSend.cpuMs : NaN,
        waitMs: cpuAtSend && cpuAtEnd ? cpuAtEnd.waitMs - cpuAtSend.waitMs : NaN
      })
      inFlight = false
    }
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, agent }, (res) => {
      res.resume()
      res.on("end", () => done(res.statusCode))
    })
    req.on("error", () => done(0))
    req.end()
  }, everyMs)
  const scrapeLoop = (async () => {
    await scrape(service).catch(() => undefined) // resets the delay histogram
    let last = now()
    while (!stopped) {
      await sleep(1000)
      try {
        const m = await scrape(service)
        const at = now()
        scrapes.push({
          sched: schedstat(service.pid),
          ticks: machineTicks(),
          serviceCpuMs: cpuMs(service.pid),
          from: last,
          at,
          eldMaxMs: m.get("nodejs_eventloop_lag_max_seconds") * 1000,
          gcMajorSum: m.get("nodejs_gc_duration_seconds_sum{kind=\"major\"}") ?? 0,
          gcMajorCount: m.get("nodejs_gc_duration_seconds_count{kind=\"major\"}") ?? 0,
          gcMinorSum: m.get("nodejs_gc_duration_seconds_sum{kind=\"minor\"}") ?? 0,
          gcIncrementalSum: m.get("nodejs_gc_duration_seconds_sum{kind=\"incremental\"}") ?? 0,
          gcBuckets: gcBuckets(m),
          rss: memoryOf(service.pid).rss,
          heapUsed: m.get("nodejs_heap_size_used_bytes"),
          external: m.get("nodejs_external_memory_bytes")
        })
        last = at
      } catch { /* the service is going away */ }
    }
  })()
  return {
    probes,
    scrapes,
    startedAt: now(),
    stop: async () => {
      stopped = true
      clearInterval(tick)
      await scrapeLoop
      agent.destroy()
      return { worstTimerLateness }
    }
  }
}

/** nodejs_gc_duration_seconds bucket counts: { kind: [[le, count], ...] } */
const gcBuckets = (m) => {
  const out = {}
  for (const [key, value] of m) {
    if (!key.startsWith("nodejs_gc_duration_seconds_bucket{")) continue
    const le = key.match(/le="([^"]+)"/)?.[1]
    const kind = key.match(/kind="([^"]+)"/)?.[1]
    if (le === undefined || kind === undefined) continue
    ;(out[kind] ??= []).push([le === "+Inf" ? Infinity : Number(le), value])
  }
  for (const k of Object.keys(out)) out[k].sort((a, b) => a[0] - b[0])
  return out
}

/** From two bucket snapshots: per kind, the bucket "(lo, hi] s" of the longest GC pause between them. */
const longestGc = (a, b) => {
  const out = {}
  for (const kind of Object.keys(b ?? {})) {
    const before = new Map((a?.[kind] ?? []).map(([le, n]) => [le, n]))
    let prevLe = 0
    let longest
    let prevDiff = 0
    for (const [le, n] of b[kind]) {
      const diff = n - (before.get(le) ?? 0) // cumulative
      if (diff > prevDiff) longest = `${prevLe}-${le} s`
      prevDiff = diff
      prevLe = le
    }
    if (longest) out[kind] = longest
  }
  return out
}

/** The worst probe and event-loop delay over [startAt, endAt] (epoch ms). */
const delaysOver = (probes, scrapes, startAt, endAt) => {
  const inWindow = probes.filter((p) => p.sentAt + p.ms >= startAt && p.sentAt <= endAt)
  const worstProbe = inWindow.reduce((w, p) => (p.ms > w ? p.ms : w), 0)
  const worst = inWindow.find((p) => p.ms === worstProbe)
  // the probe during which the main thread ran longest: the longest the loop was busy
  const busiest = inWindow.reduce((w, p) => (w === undefined || p.cpuMs > w.cpuMs ? p : w), undefined)
  const overlapping = scrapes.filter((s) => s.at >= startAt && s.from <= endAt)
  const eldMax = overlapping.reduce((w, s) => Math.max(w, s.eldMaxMs), 0)
  const i0 = scrapes.findIndex((s) => s.at >= startAt)
  const before = i0 > 0 ? scrapes[i0 - 1] : undefined
  const after = overlapping[overlapping.length - 1]
  const gc = before && after
    ? {
      majorMs: (after.gcMajorSum - before.gcMajorSum) * 1000,
      majorCount: after.gcMajorCount - before.gcMajorCount,
      minorMs: (after.gcMinorSum - before.gcMinorSum) * 1000,
      incrementalMs: (after.gcIncrementalSum - before.gcIncrementalSum) * 1000,
      longestPause: longestGc(before.gcBuckets, after.gcBuckets)
    }
    : undefined
  // the main thread's CPU and run-queue wait (/proc/<pid>/task/<pid>/schedstat), the machine's other load
  let sched
  if (before && after && before.sched && after.sched) {
    const wall = after.at - before.at
    const cores = (after.ticks.total - before.ticks.total) / (wall / 1000 * 100)
    const busyCores = (after.ticks.busy - before.ticks.busy) / (wall / 1000 * 100)
    sched = {
      wallMs: wall,
      mainThreadCpuMs: after.sched.cpuMs - before.sched.cpuMs,
      mainThreadRunQueueWaitMs: after.sched.waitMs - before.sched.waitMs,
      serviceCores: (after.serviceCpuMs - before.serviceCpuMs) / wall,
      machineBusyCores: busyCores,
      cores: round(cores, 1)
    }
  }
  const p = inWindow.map((x) => x.ms).sort((a, b) => a - b)
  return {
    probes: inWindow.length,
    worstProbeMs: worstProbe,
    worstProbe: worst && { atMs: worst.sentAt - startAt, ms: worst.ms, mainThreadCpuMs: worst.cpuMs, mainThreadWaitMs: worst.waitMs },
    busiestProbe: busiest && { atMs: busiest.sentAt - startAt, ms: busiest.ms, mainThreadCpuMs: busiest.cpuMs, mainThreadWaitMs: busiest.waitMs },
    p99ProbeMs: p.length ? p[Math.min(p.length - 1, Math.floor(p.length * 0.99))] : undefined,
    eventLoopDelayMaxMs: eldMax,
    gc,
    sched
  }
}

const dumpBench = async (db, tmp, size) => {
  const lock = await holdLeaderLock(db.url)
  let service
  try {
    const interval = opts.dumpInterval
    service = await startService({ db, tmp, size, dumpInterval: interval, label: `service-${size}-dump` })
    log(
      `  start (follower; dump every ${interval} s${service.nodeOptions ? `; NODE_OPTIONS=${service.nodeOptions}` : ""}): ` +
        `loaded ${service.start.loadedItems} items ${fmtS(service.start.loadMs)} after spawn; ready after ${fmtS(service.start.readyMs)}`
    )
    const first = service.start.firstDump
    log(`  first dump (right after the load): ${fmtS(first.millis)}, gzip ${mib(first.gzipBytes)} MiB, JSON ${mib(first.jsonBytes)} MiB`)
    // The memory is measured after the probed regenerations: its forced full GC (through the
    // inspector) stalls the process for seconds at millions of items, and the build after it
    // started with a 250-500 ms stall of its own (seen at 2.5M: only the first build probed after it).
    const probes = startProbes(service, opts.probeMs)
    const firstIndex = service.events.findIndex((e) => messageOf(e) === "catalogue dump built")
    const regens = []
    let from = firstIndex + 1
    for (let i = 0; i < opts.dumpRegens; i++) {
      const { event, index } = await service.waitLog("catalogue dump built", { from, timeoutMs: (interval + 600) * 1000 })
      from = index + 1
      regens.push(dumpOf(event))
      await sleep(1500) // the scrape after the end
    }
    if (opts.dumpChanges > 0) {
      // as another node's sync leader would: each change in the items table and the log, one
      // transaction; the service (a follower) tails them, and its next build finds most pieces changed
      const t0 = performance.now()
      const changedIds = await writePriceChanges(db.url, { n: opts.dumpChanges, delta: 1 })
      log(`  ${opts.dumpChanges} price changes written to the change log in ${fmtS(performance.now() - t0)}`)
      const { event, index } = await service.waitLog("catalogue dump built", { from, timeoutMs: (interval + 600) * 1000 })
      from = index + 1
      const changed = { ...dumpOf(event), afterChanges: opts.dumpChanges }
      if (changed.piecesReused > changed.pieces / 10) {
        // the build had started before the changes were applied: the one after it is the measure
        const next = await service.waitLog("catalogue dump built", { from, timeoutMs: (interval + 600) * 1000 })
        Object.assign(changed, dumpOf(next.event))
      }
      regens.push(changed)
      await sleep(1500)
      // back to the seeded prices (a later run with --db checks the rows against the seed)
      await writePriceChanges(db.url, { ids: changedIds, delta: -1 })
    }
    const idleStart = Math.max(first.endAt, probes.startedAt) + 2000
    const { worstTimerLateness } = await probes.stop()
    const memoryAfter = await memoryNow(service)
    // the steady state: index loaded, one dump held
    const memorySteady = await memorySnapshot(service)
    printMemory("memory after load and the regenerations", memorySteady)
    for (const r of regens) Object.assign(r, delaysOver(probes.probes, probes.scrapes, r.startAt, r.endAt))
    // between builds: the same probes while nothing is regenerated
    const idle = []
    let idleFrom = idleStart
    for (const r of regens) {
      if (r.startAt - 1000 > idleFrom) idle.push(delaysOver(probes.probes, probes.scrapes, idleFrom, r.startAt - 1000))
      idleFrom = r.endAt + 2000
    }
    regens.forEach((r, i) =>
      log(
        `  regeneration ${i + 1}${r.afterChanges ? ` (after ${r.afterChanges} changes: ${r.pieces - r.piecesReused} of ${r.pieces} pieces rebuilt)` : ""}: ${
          fmtS(r.millis)
        }, gzip ${mib(r.gzipBytes)} MiB (JSON ${mib(r.jsonBytes)} MiB), ` +
          `/health worst ${round(r.worstProbeMs, 1)} ms (p99 ${round(r.p99ProbeMs, 1)} ms, ${r.probes} probes` +
          (r.worstProbe
            ? `; the worst at +${fmtS(r.worstProbe.atMs)}, main thread ${round(r.worstProbe.mainThreadCpuMs)} ms CPU + ${
              round(r.worstProbe.mainThreadWaitMs)
            } ms waiting for a CPU meanwhile`
            : "") +
          (r.busiestProbe
            ? `; longest main-thread CPU during one probe ${round(r.busiestProbe.mainThreadCpuMs)} ms (at +${fmtS(r.busiestProbe.atMs)}, probe ${
              round(r.busiestProbe.ms)
            } ms)`
            : "") +
          `), ` +
          `event-loop delay max ${round(r.eventLoopDelayMaxMs, 1)} ms` +
          (r.gc ?
            `, GC major ${round(r.gc.majorMs)} ms in ${r.gc.majorCount}, minor ${round(r.gc.minorMs)} ms, incremental ${round(r.gc.incrementalMs)} ms` +
            ` (longest pause by kind: ${JSON.stringify(r.gc.longestPause)})` :
            "") +
          (r.sched ?
            `; over ${fmtS(r.sched.wallMs)}: main thread ${fmtS(r.sched.mainThreadCpuMs)} CPU, ${fmtS(r.sched.mainThreadRunQueueWaitMs)} waiting for a CPU;` +
            ` service ${round(r.sched.serviceCores, 2)} cores, machine ${round(r.sched.machineBusyCores, 2)} of ${r.sched.cores} cores busy` :
            "")
      )
    )
    const idleWorst = Math.max(0, ...idle.map((x) => x.worstProbeMs))
    const idleBusiest = Math.max(0, ...idle.map((x) => x.busiestProbe?.mainThreadCpuMs ?? 0))
    const idleEld = Math.max(0, ...idle.map((x) => x.eventLoopDelayMaxMs))
    log(
      `  between regenerations: /health worst ${round(idleWorst, 1)} ms (longest main-thread CPU during one probe ${
        round(idleBusiest)
      } ms), event-loop delay max ${round(idleEld, 1)} ms;` +
        ` this process's own 10 ms timer was at worst ${round(worstTimerLateness, 1)} ms late`
    )
    log(`  RSS over the run: max ${mib(Math.max(...probes.scrapes.map((s) => s.rss)))} MiB; peak (VmHWM) ${mib(memoryOf(service.pid).hwm)} MiB`)
    return {
      start: service.start,
      nodeOptions: service.nodeOptions,
      interval,
      regenerations: regens,
      idle: { worstProbeMs: idleWorst, busiestProbeCpuMs: idleBusiest, eventLoopDelayMaxMs: idleEld },
      probeTimerWorstLatenessMs: worstTimerLateness,
      memorySteady,
      memoryAfter,
      rssTimeline: probes.scrapes.map((s) => ({ at: s.at, rss: s.rss, heapUsed: s.heapUsed, external: s.external }))
    }
  } finally {
    if (service) await service.stop()
    await lock.release()
  }
}

// ---- profile -------------------------------------------------------------------------------------

const profileRun = async (db, tmp, size, apiKey, started) => {
  const dir = join(OUT, `profile-${started.toISOString().replace(/[:.]/g, "-")}`)
  mkdirSync(dir, { recursive: true })
  const lock = await holdLeaderLock(db.url)
  const windowsUs = {}
  const toHrUs = (epochMs) => Number(process.hrtime.bigint() / 1000n) - (Date.now() - epochMs) * 1000
  let service
  const interval = 2 * (opts.warmup + opts.duration + 1) + 15
  try {
    service = await startService({
      db,
      tmp,
      size,
      dumpInterval: interval,
      inspect: false,
      nodeArgs: ["--cpu-prof", "--cpu-prof-dir", dir],
      label: "service-profiled"
    })
    const loaded = service.events.find((e) => messageOf(e) === "catalogue loaded")
    windowsUs.load = { from: Number(service.spawnedHr / 1000n), to: toHrUs(loaded.at) }
    const first = service.start.firstDump
    windowsUs.firstDump = { from: toHrUs(first.startAt), to: toHrUs(first.endAt) }
    const runs = {}
    for (const e of ENDPOINTS) {
      const r = await measure(service, e, apiKey, [service.pid], { quiet: false })
      printRun(`${e.key}`, r)
      if (r.non2xx > 0) log(`    ${r.non2xx} answers other than 2xx or 3xx`)
      runs[e.key] = r
      windowsUs[e.key] = r.window
    }
    const firstIndex = service.events.findIndex((e) => messageOf(e) === "catalogue dump built")
    const { event } = await service.waitLog("catalogue dump built", { from: firstIndex + 1, timeoutMs: (interval + 600) * 1000 })
    const regen = dumpOf(event)
    windowsUs.regeneration = { from: toHrUs(regen.startAt), to: toHrUs(regen.endAt) }
    await service.stop()
    service = undefined
    const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
    if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`)
    const profile = JSON.parse(readFileSync(join(dir, file), "utf8"))
    const summaries = {}
    for (const [name, w] of Object.entries(windowsUs)) {
      log(`\n  profile window: ${name} (${round((w.to - w.from) / 1000)} ms)`)
      summaries[name] = summarise(profile, { top: 25, ...w })
      printSummary(summaries[name], (...a) => log("   ", ...a))
    }
    return { file: join(dir, file), runs, regeneration: regen, summaries }
  } finally {
    if (service) await service.stop()
    await lock.release()
  }
}

// ---- phases --------------------------------------------------------------------------------------

/** Starts the service with SIM_CATALOGUE_SIZE = size as the sync leader and times its reconcile. */
const syncTo = async (db, tmp, size) => {
  const service = await startService({ db, tmp, size, label: `service-sync-${size}` })
  try {
    const reconcile = await reconcileOf(service)
    // the index must hold them all: wait for the tail to catch up
    for (let i = 0; i < 600; i++) {
      const m = await scrape(service)
      if (m.get("catalogue_items") === size) break
      await sleep(500)
    }
    const caughtUpMs = Date.now() - service.spawnedAt
    return { ...reconcile, caughtUpMs, start: service.start, cpuMs: cpuMs(service.pid), memory: await memoryNow(service) }
  } finally {
    await service.stop()
  }
}

const vacuum = async (db) => {
  const t0 = performance.now()
  await withClient(db.url, (c) => c.query("VACUUM ANALYZE catalogue_items").then(() => c.query("VACUUM ANALYZE catalogue_changes")))
  return performance.now() - t0
}

const initialSyncOnly = async (started, info) => {
  const db = await createDatabase("_sync")
  const tmp = mkdtempSync(join(tmpdir(), "mps-bench-cat-"))
  const results = { date: started.toISOString(), command: `node bench/catalogue/run.mjs ${argv.join(" ")}`, machine: info, build: BUILD, options: opts }
  try {
    log(`database ${db.name}: initial sync of ${opts.initialSyncOnly} items into an empty catalogue`)
    const r = await syncTo(db, tmp, opts.initialSyncOnly)
    log(
      `  reconciled ${r.listings} listings, ${r.changes} changes: ${fmtS(r.ms)} (from spawn ${fmtS(r.fromSpawnMs)}); index caught up ${
        fmtS(r.caughtUpMs)
      } after spawn;` +
        ` service CPU ${fmtS(r.cpuMs)}`
    )
    printMemory("memory after the sync", r.memory)
    results.initialSync = r
  } finally {
    await db.drop().catch((e) => log(`could not drop ${db.name}: ${e.message}`))
    rmSync(tmp, { recursive: true, force: true })
  }
  return results
}

/**
 * --pglite: the HTTP figures (search, filtered list, dump) on the embedded database: for each HTTP
 * size a start on a fresh DATA_DIR that fills itself by the supplier sync, then the same rounds as
 * on PostgreSQL, once the reconciliation is done.
 */
const pgliteHttp = async (started, info) => {
  const results = {
    date: started.toISOString(),
    command: `node bench/catalogue/run.mjs ${argv.join(" ")}`.trim(),
    machine: info,
    build: BUILD,
    database: "pglite",
    sizes: {}
  }
  for (const size of opts.httpSizes) {
    log(`\n== ${size.toLocaleString("en")} items on PGlite`)
    const tmp = mkdtempSync(join(tmpdir(), "bench-catalogue-pglite-"))
    const service = await startService({ db: { url: undefined }, tmp, size, inspect: false, label: `service-pglite-${size}` })
    try {
      const reconcile = await reconcileOf(service)
      log(
        `  ready after ${fmtS(service.start.readyMs)}; reconciled ${reconcile.listings} listings (${reconcile.changes} changes) ${
          fmtS(reconcile.fromSpawnMs)
        } after spawn`
      )
      await sleep(opts.settleSeconds * 1000)
      const apiKey = (await admin(service, "/admin/merchants", { name: `bench-catalogue-${process.pid}`, webhook_url: null })).api_key
      results.sizes[size] = { start: service.start, reconcile, http: await httpBench(service, apiKey, tmp) }
    } finally {
      await service.stop()
      rmSync(tmp, { recursive: true, force: true })
    }
  }
  return results
}

const main = async () => {
  const started = new Date()
  const info = await machine(PG_SERVER_URL)
  log(`bench/catalogue ${started.toISOString()}`)
  log(`machine: ${info.nproc} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB (${info.freeMemoryGiB} free), node ${info.node}, PostgreSQL ${info.postgres}`)
  log(`settings: ${JSON.stringify(opts)}`)
  buildIfNeeded()
  mkdirSync(OUT, { recursive: true })
  BUILD = snapshotBuild(join(OUT, `build-${started.toISOString().replace(/[:.]/g, "-")}`))
  await useBuild(BUILD.distSrc)
  log(`build: commit ${BUILD.commit}${BUILD.dirty ? " + uncommitted changes in src/" : ""} (${BUILD.subject}); measuring the copy in ${BUILD.dir}`)
  const fileOf = () => join(OUT, `results-${started.toISOString().replace(/[:.]/g, "-")}.json`)
  LOGS = join(OUT, `logs-${started.toISOString().replace(/[:.]/g, "-")}`)
  mkdirSync(LOGS, { recursive: true })
  log(`service logs: ${LOGS}`)
  if (opts.initialSyncOnly > 0 || opts.pglite) {
    const results = opts.pglite ? await pgliteHttp(started, info) : await initialSyncOnly(started, info)
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
    // migrations, the merchant, the memory baseline with no items (on a database of its own when
    // an existing one is reused)
    log(`\n== 0 items: migrations, merchant, baseline`)
    let populated = opts.db === undefined
      ? 0
      : await withClient(db.url, (c) => c.query("SELECT count(*)::int AS n FROM catalogue_items")).then((r) => r.rows[0].n)
    if (opts.db !== undefined) log(`  reusing ${db.name} with ${populated} items; the baseline runs on an empty database of its own`)
    const baseDb = opts.db === undefined ? db : await createDatabase("_base")
    let service = await startService({ db: baseDb, tmp, size: 0, label: "service-0" })
    let apiKey
    if (opts.db === undefined) apiKey = (await admin(service, "/admin/merchants", { name: `bench-catalogue-${process.pid}`, webhook_url: null })).api_key
    const baselineReconcile = await reconcileOf(service)
    await sleep(opts.settleSeconds * 1000)
    const baseline = await memorySnapshot(service)
    await service.stop()
    if (baseDb !== db) await baseDb.drop()
    log(`  loaded ${fmtS(service.start.loadMs)} after spawn; ready after ${fmtS(service.start.readyMs)}; reconcile ${baselineReconcile.changes} changes`)
    printMemory("memory with 0 items", baseline)
    results.baseline = { start: service.start, memory: baseline }
    save()

    const sizes = [...new Set([...opts.httpSizes, ...opts.dumpSizes, ...(opts.profile ? [opts.profileSize] : [])])].sort((a, b) => a - b)
    for (const size of sizes) {
      const r = (results.sizes[size] = {})
      log(`\n== ${size.toLocaleString("en")} items`)
      // populate
      if (populated > size) throw new Error(`${db.name} holds ${populated} items, more than ${size}`)
      if (populated === size) {
        log(`  populate: ${db.name} already holds ${size} items`)
        r.populate = { method: "reused", from: populated }
      } else if (size <= opts.syncPopulateMax) {
        log(`  populate: the service's supplier sync, ${populated} -> ${size} items`)
        const s = await syncTo(db, tmp, size)
        log(
          `  sync: reconciled ${s.listings} listings with ${s.changes} changes in ${fmtS(s.ms)} (from spawn ${fmtS(s.fromSpawnMs)});` +
            ` index caught up ${fmtS(s.caughtUpMs)} after spawn; ${round(s.changes / (s.ms / 1000))} items/s; service CPU ${fmtS(s.cpuMs)}`
        )
        r.populate = { method: "sync", from: populated, ...s }
      } else {
        log(`  populate: COPY of the synthetic rows ${populated} -> ${size} (seed.mjs)`)
        const s = await seedItems(db.url, populated, size, {})
        log(`  COPY: ${s.rows} rows in ${fmtS(s.ms)}`)
        r.populate = { method: "copy", from: populated, ...s }
      }
      {
        const compared = await withClient(db.url, (c) => verifyAgainstSync(c, 2000))
        log(
          compared > 0
            ? `  check: ${compared} rows the service's sync wrote are byte-identical to seed.mjs's rows for the same listings`
            : `  check: no rows written by the service's sync to compare with (seed.mjs rows unchecked)`
        )
        r.populate.verifiedRows = compared
      }
      if (r.populate.method !== "reused") r.populate.vacuumMs = await vacuum(db)
      populated = size
      save()

      if (opts.httpSizes.includes(size)) {
        const leads = size <= opts.leaderMax
        log(`  -- start as sync ${leads ? "leader" : "follower"} (dump every 1 h), memory, HTTP`)
        const lock = leads ? undefined : await holdLeaderLock(db.url)
        service = await startService({ db, tmp, size, label: `service-${size}` })
        try {
          apiKey ??= (await admin(service, "/admin/merchants", { name: `bench-catalogue-${process.pid}`, webhook_url: null })).api_key
          log(
            `  loaded ${service.start.loadedItems} items ${fmtS(service.start.loadMs)} after spawn; ready after ${fmtS(service.start.readyMs)};` +
              ` first dump ${fmtS(service.start.firstDump.millis)}`
          )
          const reconcile = leads ? await reconcileOf(service) : undefined
          if (reconcile) {
            log(
              `  reconcile at start: ${reconcile.listings} listings, changes: ${reconcile.changes} in ${fmtS(reconcile.ms)}` +
                (reconcile.changes === 0 ? " (the database holds exactly what the sync would write)" : " WARNING: expected 0")
            )
          }
          await sleep(opts.settleSeconds * 1000)
          const memory = await memorySnapshot(service)
          printMemory("memory after load, first dump and reconcile", memory)
          r.start = service.start
          r.reconcileAtStart = reconcile
          r.memory = memory
          save()
          // the HTTP load on a start without the inspector, which the memory figures need: with
          // --inspect (no session attached) the young collections took up to 13 ms instead of 4,
          // and the p99 of /items/search was 11-22 ms instead of 5-8
          await service.stop()
          service = await startService({ db, tmp, size, inspect: false, label: `service-${size}-http` })
          if (leads) await reconcileOf(service)
          await sleep(opts.settleSeconds * 1000)
          r.http = await httpBench(service, apiKey, tmp)
          r.memoryAfterHttp = await memoryNow(service)
          save()
        } finally {
          await service.stop()
          await lock?.release()
        }
      }

      if (opts.dumpSizes.includes(size)) {
        log(`  -- dump regeneration`)
        r.dump = await dumpBench(db, tmp, size)
        if (r.memory === undefined) r.memory = r.dump.memorySteady
        save()
      }

      if (opts.profile && size === opts.profileSize) {
        log(`  -- CPU profile (node --cpu-prof; follower)`)
        if (apiKey === undefined) throw new Error("--profile needs its size among --http-sizes (for the merchant)")
        r.profile = await profileRun(db, tmp, size, apiKey, started)
        save()
      }
    }

    // summary
    log(`\n== summary`)
    const base = results.baseline.memory.rss
    for (const size of sizes) {
      const r = results.sizes[size]
      if (r.memory) {
        const perM = ((r.memory.rss - base) / size) * 1e6
        r.rssPerMillion = perM
        log(
          `  ${size}: RSS ${mib(r.memory.rss)} MiB - baseline ${mib(base)} MiB = ${round(perM / 2 ** 30, 2)} GiB per 1,000,000 items (target < 1.5 GB)` +
            `; load ${fmtS((r.start ?? r.dump.start).loadMs)} after spawn`
        )
      }
      for (const e of ENDPOINTS) {
        const h = r.http?.[e.key]
        if (h) {
          log(
            `  ${size} ${e.key}: service ${round(h.service.rps)} req/s p99 ${round(h.service.p99, 1)} ms; bare ${round(h.bare.rps)} req/s p99 ${
              round(h.bare.p99, 1)
            } ms; ratio ${round(h.ratio, 3)}`
          )
        }
      }
      if (r.dump) {
        const worst = Math.max(...r.dump.regenerations.map((x) => x.worstProbeMs))
        const eld = Math.max(...r.dump.regenerations.map((x) => x.eventLoopDelayMaxMs))
        const ms = r.dump.regenerations.map((x) => x.millis)
        log(
          `  ${size} dump: regeneration ${ms.map((x) => fmtS(x)).join(", ")}; gzip ${mib(r.dump.regenerations[0].gzipBytes)} MiB; ` +
            `worst /health ${round(worst, 1)} ms, event-loop delay max ${round(eld, 1)} ms (target < 50 ms)`
        )
      }
    }
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
