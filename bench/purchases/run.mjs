/**
 * bench/purchases: POST /api/v1/merchant/buy per second and latency at 1, 16 and 64 concurrent
 * clients on a real PostgreSQL, beside a bare `pg` script running the same transaction, in the
 * same run.
 *
 *   node bench/purchases/run.mjs [--levels 1,16,64] [--duration 15] [--warmup 3] [--rounds 2]
 *                                [--catalogue 100000] [--timeScale 100] [--merchants 1] [--profile]
 *
 * 1. A fresh database on BENCH_PG_URL's server; the built service with SIM_CATALOGUE_SIZE=--catalogue
 *    and no churn, and SIM_TIME_SCALE=--timeScale so that the purchase worker's later steps
 *    (acknowledgement, trade offer, decision) fall after the run; the worker still picks up every
 *    new purchase at once (created -> processing, the simulated provider's order: two
 *    transactions per buy), competing for the CPU as it would in production.
 *    --merchants merchants, each funded (POST /admin/deposits) with more than the whole catalogue.
 * 2. The service is stopped once and its database cloned (CREATE DATABASE ... TEMPLATE): the bare
 *    baseline (bench/purchases/bare.mjs, child process) works on that copy: the same merchants,
 *    balances and items, nothing shared with the service but the PostgreSQL server.
 * 3. For each level, --rounds rounds alternating (service, bare, bare, service, ...), each a
 *    --warmup then a --duration window. The service is loaded from this process over keep-alive
 *    HTTP connections (one per client, each client sending its next request when the last one
 *    answered; bench/lib/http-connection.mjs, a minimal client like autocannon's: node:http's
 *    own client cost about 0.5 ms of CPU per request here, in the measured latency); every
 *    request a distinct custom_id and item_id, max_price above any price, the trade URL
 *    https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH. The bare runs the
 *    same statements with a pg Pool of as many connections as clients.
 *    With --httpBare (the default; --no-httpBare leaves it out), a third variant in each round:
 *    bench/purchases/bare-http.mjs, the bare's transaction behind a minimal node:http server, on a
 *    third copy, loaded over HTTP exactly as the service is: what an HTTP hop alone costs the bare,
 *    so that the service's own cost (service / bare-http) is told from the hop's (bare-http / bare).
 * 4. Beside the figures: CPU time per buy of the server process (service or bare), the WAL
 *    written per buy (the whole server's), the cores used by the PostgreSQL backends of the
 *    database under test (the server is shared with other databases; its WAL writer and
 *    checkpointer are left out) and the machine, and what the PostgreSQL backends of the database
 *    under test were doing (pg_stat_activity sampled every 10 ms: executing, waiting for a lock,
 *    or idle in transaction = waiting for the client's next statement).
 * --worker deferred: a trigger (in both databases) sets each new purchase's next_step_at a day
 *    ahead, so the purchase worker leaves the new purchases alone during the run: the /buy path
 *    alone, to tell its cost from the worker's. Default `on`.
 * --merchants M: the clients (and the bare's workers) spread over M merchants (client i buys for
 *    merchant i mod M), to tell the per-merchant balance row's lock from the rest.
 * --profile: one more service run at --profileAt (16) clients under `node --cpu-prof`; a summary of the window
 *    is printed and the profile kept in bench/purchases/out/.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { printSummary, summarise } from "../http/cpuprofile-summary.mjs"
import {
  admin,
  argOptions,
  atInterrupt,
  buildIfNeeded,
  CLK_TCK,
  connectClient,
  cpuMs,
  createDatabase,
  deferPurchaseWorker,
  forkChild,
  log,
  machineInfo,
  machineTicks,
  mean,
  percentileSorted,
  PG_SERVER_URL,
  pgBackendCpu,
  pgCpuDelta,
  round,
  rpc,
  sleep,
  startService,
  waitQuiet,
  withAdminClient
} from "../lib/harness.mjs"
import { openConnection } from "../lib/http-connection.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const OUT = join(HERE, "out")
const TRADE_URL = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
const STEAM_ID = String(76561197960265728n + 12345678n)
const BUY_PATH = "/api/v1/merchant/buy"

const argv = process.argv.slice(2)
const opts = argOptions(argv, {
  levels: "1,16,64",
  duration: 15,
  warmup: 3,
  rounds: 2,
  catalogue: 100000,
  timeScale: 100,
  merchants: 1,
  worker: "on",
  httpBare: true,
  profile: false,
  profileAt: 16,
  quietBusy: 15,
  waitQuiet: 60
})
const levels = opts.levels.split(",").map(Number)

// ---- PostgreSQL activity sampler -----------------------------------------------------------------

const activitySampler = async (database) => {
  const client = await connectClient(PG_SERVER_URL)
  let running = false
  let samples = 0
  const counts = {}
  let loop
  const start = () => {
    running = true
    samples = 0
    for (const k of Object.keys(counts)) delete counts[k]
    loop = (async () => {
      while (running) {
        const rows = (await client.query(
          `SELECT state, coalesce(wait_event_type, '') AS wt, coalesce(wait_event, '') AS we, count(*)::int AS n
           FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()
           GROUP BY 1, 2, 3`,
          [database]
        )).rows
        samples++
        for (const r of rows) {
          const key = r.state === "active" ?
            (r.wt === "" ? "active: running" : `active: waiting ${r.wt}/${r.we}`)
            : r.state === "idle in transaction" ?
            "idle in transaction (waiting for the client)"
            : r.state === "idle"
            ? (r.wt === "Client" ? "idle (no transaction)" : `idle ${r.wt}/${r.we}`)
            : r.state
          counts[key] = (counts[key] ?? 0) + r.n
        }
        await sleep(10)
      }
    })()
  }
  const stop = async () => {
    running = false
    await loop
    return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, round(v / Math.max(1, samples), 2)]).sort((a, b) => b[1] - a[1]))
  }
  return { start, stop, end: () => client.end() }
}

// ---- the service's load ---------------------------------------------------------------------------

const loadService = async (service, merchants, items, { concurrency, warmup, duration, prefix, onMeasuring, onWindowEnd }) => {
  const url = new URL(service.baseUrl)
  const connections = await Promise.all(Array.from({ length: concurrency }, () => openConnection(url.hostname, Number(url.port))))
  let measuring = false
  let stop = false
  const latencies = []
  let count = 0
  let errors = 0
  const errorKinds = {}
  let seq = 0
  const worker = async (w) => {
    const merchant = merchants[w % merchants.length]
    const headers = { authorization: `Bearer ${merchant.api_key}`, "content-type": "application/json" }
    while (!stop) {
      if (items.next >= items.ids.length) throw new Error(`service: out of items after ${items.next}`)
      const itemId = items.ids[items.next++]
      const body = JSON.stringify({ item_id: itemId, max_price: 100000000, custom_id: `${prefix}-${seq++}`, target_trade_url: TRADE_URL })
      const t0 = performance.now()
      let ok = false
      let kind
      try {
        const res = await connections[w].request("POST", BUY_PATH, headers, body)
        ok = res.status === 201
        if (!ok) kind = `${res.status} ${res.body.slice(0, 120)}`
      } catch (e) {
        kind = e.message
      }
      if (measuring && !stop) {
        if (ok) {
          latencies.push(performance.now() - t0)
          count++
        } else {
          errors++
          errorKinds[kind] = (errorKinds[kind] ?? 0) + 1
        }
      }
    }
  }
  const workers = Array.from({ length: concurrency }, (_, w) => worker(w))
  await sleep(warmup * 1000)
  measuring = true
  onMeasuring()
  const t0 = performance.now()
  await sleep(duration * 1000)
  const seconds = (performance.now() - t0) / 1000
  stop = true
  measuring = false
  onWindowEnd()
  await Promise.all(workers)
  connections.forEach((connection) => connection.close())
  return { count, errors, errorKinds, seconds, latencies }
}

/**
 * The server's WAL so far: bytes (from the insert position), records, full-page images and flushes
 * (pg_stat_wal, whose counters backends report within about a second). The server is shared.
 */
const walStats = () =>
  withAdminClient((c) =>
    c.query(
      `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS bytes, wal_records::float8 AS records, wal_fpi::float8 AS fpi,
          wal_sync::float8 AS syncs FROM pg_stat_wal`
    )
  ).then((q) => q.rows[0])
const walDelta = (a, b) => ({ bytes: b.bytes - a.bytes, records: b.records - a.records, fpi: b.fpi - a.fpi, syncs: b.syncs - a.syncs })

// ---- one measured run -----------------------------------------------------------------------------

/** The service's fast-lane buy transactions and the purchases they created so far, and its event loop's delay (its /metrics). */
const buyBatchMetrics = async (service) => {
  const text = await fetch(`${service.opsUrl}/metrics`).then((res) => res.text())
  const value = (name) => Number(text.split("\n").find((line) => line.startsWith(`${name} `))?.split(" ")[1] ?? NaN)
  return {
    transactions: value("purchases_buy_transactions_total"),
    purchases: value("purchases_buy_transaction_purchases_total"),
    loopP99: value("nodejs_eventloop_lag_p99_seconds"),
    loopMax: value("nodejs_eventloop_lag_max_seconds")
  }
}

/** A bare's pool: a connection per client, as far as the shared server has free ones. */
const barePoolSize = async (concurrency) => {
  const free = await withAdminClient((c) =>
    c.query(
      "SELECT current_setting('max_connections')::int - (SELECT count(*) FROM pg_stat_activity)::int AS free"
    )
  ).then((q) => q.rows[0].free)
  const poolMax = Math.max(1, Math.min(concurrency, free - 20))
  if (poolMax < concurrency) log(`  note: PostgreSQL has ${free} free connections (max_connections is shared): the bare's pool is capped at ${poolMax}`)
  return poolMax
}

const measure = async (which, ctx, concurrency) => {
  const busyBefore = await waitQuiet(`${which} at ${concurrency}`, { maxSeconds: opts.waitQuiet, quietBusy: opts.quietBusy })
  const { process: proc, sampler, database } = {
    service: { process: ctx.service, sampler: ctx.serviceSampler, database: ctx.dbName },
    bare: { process: ctx.bare, sampler: ctx.bareSampler, database: ctx.bareDbName },
    "bare-http": { process: ctx.bareHttp?.process, sampler: ctx.bareHttpSampler, database: ctx.bareHttpDbName }
  }[which]
  const pid = proc.child.pid
  let before
  let pgBefore
  let walBefore
  const onMeasuring = () => {
    before = { hr: Number(process.hrtime.bigint() / 1000n), t: performance.now(), cpu: cpuMs(pid), ticks: machineTicks(), self: process.cpuUsage() }
    pgBefore = pgBackendCpu(database)
    walBefore = walStats()
    sampler.start()
  }
  let after
  let pgAfter
  let walAfter
  const onWindowEnd = () => {
    after = { hr: Number(process.hrtime.bigint() / 1000n), t: performance.now(), cpu: cpuMs(pid), ticks: machineTicks(), self: process.cpuUsage(before.self) }
    pgAfter = pgBackendCpu(database)
    walAfter = walStats()
  }
  const prefix = `${which}-${concurrency}-${Date.now()}`
  let r
  let batching = ""
  if (which === "service") {
    const batchesBefore = await buyBatchMetrics(ctx.service)
    // a scrape at the warm-up's end resets prom-client's event-loop delay histogram
    const loopProbe = setTimeout(() => fetch(`${ctx.service.opsUrl}/metrics`).then((res) => res.text()), opts.warmup * 1000)
    r = await loadService(ctx.service, ctx.merchants, ctx.serviceItems, {
      concurrency,
      warmup: opts.warmup,
      duration: opts.duration,
      prefix,
      onMeasuring,
      onWindowEnd
    })
    clearTimeout(loopProbe)
    const batchesAfter = await buyBatchMetrics(ctx.service)
    const [transactions, purchases] = [batchesAfter.transactions - batchesBefore.transactions, batchesAfter.purchases - batchesBefore.purchases]
    batching =
      `\n              fast lane (warm-up included): ${purchases} purchases in ${transactions} transactions, ${
        round(purchases / transactions, 2)
      } per transaction` +
      `; event loop delay since the warm-up: p99 ${round(batchesAfter.loopP99 * 1000, 1)} ms, max ${round(batchesAfter.loopMax * 1000, 1)} ms`
  } else if (which === "bare-http") {
    await ctx.bareHttpCall({ cmd: "pool", max: await barePoolSize(concurrency) })
    r = await loadService({ baseUrl: ctx.bareHttp.baseUrl }, ctx.merchants, ctx.bareHttpItems, {
      concurrency,
      warmup: opts.warmup,
      duration: opts.duration,
      prefix,
      onMeasuring,
      onWindowEnd
    })
    // its connections are given back between windows, as the bare's are (the server's are shared),
    // once their CPU time at the window's end is read
    await pgAfter
    await ctx.bareHttpCall({ cmd: "pool", max: 0 })
  } else {
    const measuringListener = (m) => {
      if (m && m.measuring) onMeasuring()
      if (m && m.windowEnd) onWindowEnd()
    }
    ctx.bare.child.on("message", measuringListener)
    const poolMax = await barePoolSize(concurrency)
    r = await ctx.bareCall({ cmd: "run", concurrency, poolMax, warmup: opts.warmup, duration: opts.duration, prefix })
    ctx.bare.child.off("message", measuringListener)
  }
  const pgMs = pgCpuDelta(await pgBefore, await pgAfter)
  const wal = walDelta(await walBefore, await walAfter)
  const activity = await sampler.stop()
  const seconds = (after.t - before.t) / 1000
  const sorted = Float64Array.from(r.latencies).sort()
  const cores = (ms) => round(ms / 1000 / seconds, 2)
  const res = {
    rps: r.count / r.seconds,
    count: r.count,
    errors: r.errors,
    errorKinds: r.errorKinds,
    p50: percentileSorted(sorted, 50),
    p90: percentileSorted(sorted, 90),
    p99: percentileSorted(sorted, 99),
    max: sorted[sorted.length - 1],
    cpuMsPerBuy: (after.cpu - before.cpu) / r.count,
    cores: {
      server: cores(after.cpu - before.cpu),
      loadGenerator: which !== "bare" ? cores((after.self.user + after.self.system) / 1000) : 0,
      postgres: cores(pgMs),
      machine: cores(((after.ticks.busy - before.ticks.busy) * 1000) / CLK_TCK)
    },
    activity,
    walPerBuy: { bytes: wal.bytes / r.count, records: wal.records / r.count, fullPageImages: wal.fpi / r.count, syncs: wal.syncs / r.count },
    poolMax: r.poolMax,
    machineBusyBefore: busyBefore,
    window: { from: before.hr, to: after.hr }
  }
  log(
    `  ${which.padEnd(8)} c=${String(concurrency).padStart(2)}  ${String(round(res.rps, 1)).padStart(7)} buys/s  p50 ${round(res.p50, 1)} ms` +
      `  p99 ${round(res.p99, 1)} ms  max ${round(res.max, 1)} ms  errors ${res.errors}${
        res.errors ? ` ${JSON.stringify(res.errorKinds).slice(0, 300)}` : ""
      }` +
      `\n              CPU ${
        round(res.cpuMsPerBuy * 1000)
      } µs/buy in the ${which} process; cores: machine ${res.cores.machine} = ${which} ${res.cores.server}` +
      ` + its postgres backends ${res.cores.postgres}${which !== "bare" ? ` + load generator ${res.cores.loadGenerator}` : " (its own workers included)"}` +
      ` + rest ${round(res.cores.machine - res.cores.server - res.cores.postgres - res.cores.loadGenerator, 2)}` +
      `\n              WAL per buy (whole server): ${round(res.walPerBuy.bytes)} bytes, ${round(res.walPerBuy.records, 1)} records, ` +
      `${round(res.walPerBuy.fullPageImages, 2)} full-page images, ${round(res.walPerBuy.syncs, 2)} flushes` +
      `\n              backends (mean count): ${Object.entries(activity).map(([k, v]) => `${k} ${v}`).join("; ")}${batching}`
  )
  return res
}

// ---- main -----------------------------------------------------------------------------------------

const main = async () => {
  const started = new Date()
  const stamp = started.toISOString().replace(/[:.]/g, "-")
  const info = await machineInfo()
  log(`bench/purchases ${started.toISOString()}`)
  log(`machine: ${info.nproc} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB, node ${info.node}, PostgreSQL ${info.postgres}; revision ${info.revision}`)
  log(`settings: ${JSON.stringify(opts)}`)
  buildIfNeeded()
  mkdirSync(OUT, { recursive: true })
  const dataDir = join(OUT, `data-${stamp}`)
  const results = { date: started.toISOString(), command: `node bench/purchases/run.mjs ${argv.join(" ")}`.trim(), machine: info, options: opts }
  const serviceExtra = { SIM_CATALOGUE_SIZE: String(opts.catalogue), SIM_CHURN_PER_SECOND: "0", SIM_TIME_SCALE: String(opts.timeScale) }

  const db = await createDatabase("mps_bench_buy")
  const bareDbName = `${db.name}_bare`
  const bareHttpDbName = `${db.name}_barehttp`
  const dropBare = () =>
    withAdminClient(async (c) => {
      for (const name of [bareDbName, bareHttpDbName]) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    })
  atInterrupt(async () => {
    await sleep(300)
    await dropBare()
  })
  const ctx = {}
  try {
    // 1. data
    const t0 = performance.now()
    let service = await startService({ databaseUrl: db.url, dataDir, extra: serviceExtra, readyTimeoutMs: 600_000, untilIdle: true })
    log(`service ready with ${opts.catalogue} items in ${round((performance.now() - t0) / 1000, 1)} s`)
    const dbc = await connectClient(db.url)
    const total = Number((await dbc.query("SELECT sum(price_cents) AS s FROM catalogue_items WHERE status = 'active'")).rows[0].s) / 100
    const ids = (await dbc.query("SELECT id FROM catalogue_items WHERE status = 'active' ORDER BY id")).rows.map((r) => r.id)
    await dbc.end()
    const merchants = []
    for (let m = 0; m < opts.merchants; m++) {
      const merchant = await admin(service, "/admin/merchants", { name: `bench-buyer-${m}`, webhook_url: null })
      // deposits pay a 0.5 % commission above 5000 USD: fund 10 % above the whole catalogue
      let left = Math.ceil(total * 1.1)
      for (let n = 0; left > 0; n++) {
        const amount = Math.min(left, 100_000_000)
        await admin(service, "/admin/deposits", { merchant_id: merchant.merchant_id, network: "tron", amount, tx_id: `bench-buy-${m}-${n}` })
        left -= amount
      }
      merchants.push(merchant)
    }
    log(`${ids.length} active items worth ${round(total)} USD; ${merchants.length} merchant(s) funded with ${Math.ceil(total * 1.1)} USD each`)

    // 2. the bare's copy
    await service.stop()
    if (opts.worker === "deferred") {
      {
        const c = await connectClient(db.url)
        await deferPurchaseWorker(c)
        await c.end()
      }
      log("worker deferred: new purchases are due in a day (trigger in both databases)")
    }
    const copyOf = async (name) => {
      await withAdminClient((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => c.query(`CREATE DATABASE ${name} TEMPLATE ${db.name}`)))
      const url = new URL(db.url)
      url.pathname = `/${name}`
      return url.toString()
    }
    const bareUrl = await copyOf(bareDbName)
    const bareHttpUrl = opts.httpBare ? await copyOf(bareHttpDbName) : undefined
    service = await startService({ databaseUrl: db.url, dataDir, extra: serviceExtra, readyTimeoutMs: 600_000, untilIdle: true })
    ctx.service = service
    ctx.merchants = merchants
    ctx.serviceItems = { ids, next: 0 }
    const forkBare = async (module, url, label) => {
      const proc = forkChild(join(HERE, module), [], { ...process.env, NODE_ENV: "production", DATABASE_URL: url }, label)
      await new Promise((resolve, reject) => {
        proc.child.once("message", resolve)
        proc.exited.then((code) => reject(new Error(`${label} exited ${code}: ${proc.output()}`)))
      })
      return proc
    }
    ctx.bare = await forkBare("bare.mjs", bareUrl, "bare")
    ctx.bareCall = rpc(ctx.bare)
    await ctx.bareCall({ cmd: "init", merchantIds: merchants.map((m) => m.merchant_id), tradeUrl: TRADE_URL, steamId: STEAM_ID, items: ids })
    ctx.dbName = db.name
    ctx.bareDbName = bareDbName
    ctx.serviceSampler = await activitySampler(db.name)
    ctx.bareSampler = await activitySampler(bareDbName)
    if (bareHttpUrl !== undefined) {
      const proc = await forkBare("bare-http.mjs", bareHttpUrl, "bare-http")
      ctx.bareHttpCall = rpc(proc)
      const { port } = await ctx.bareHttpCall({ cmd: "init", keys: Object.fromEntries(merchants.map((m) => [m.api_key, m.merchant_id])), steamId: STEAM_ID })
      ctx.bareHttp = { process: proc, baseUrl: `http://127.0.0.1:${port}` }
      ctx.bareHttpItems = { ids, next: 0 }
      ctx.bareHttpDbName = bareHttpDbName
      ctx.bareHttpSampler = await activitySampler(bareHttpDbName)
    }
    const variants = opts.httpBare ? ["service", "bare", "bare-http"] : ["service", "bare"]

    // 3. load
    results.levels = []
    for (const c of levels) {
      log(`\n${c} concurrent client(s): ${opts.warmup} s warm-up + ${opts.duration} s, ${opts.rounds} round(s)`)
      const runs = Object.fromEntries(variants.map((which) => [which, []]))
      for (let i = 0; i < opts.rounds; i++) {
        for (const which of i % 2 === 0 ? variants : [...variants].reverse()) {
          runs[which].push(await measure(which, ctx, c))
          await sleep(1000)
        }
      }
      const agg = (rs) => ({
        rps: mean(rs.map((r) => r.rps)),
        p50: mean(rs.map((r) => r.p50)),
        p99: mean(rs.map((r) => r.p99)),
        cpuMsPerBuy: mean(rs.map((r) => r.cpuMsPerBuy)),
        errors: rs.reduce((a, r) => a + r.errors, 0)
      })
      const s = agg(runs.service)
      const b = agg(runs.bare)
      const h = runs["bare-http"] === undefined ? undefined : agg(runs["bare-http"])
      results.levels.push({ concurrency: c, service: s, bare: b, bareHttp: h, ratio: s.rps / b.rps, runs })
    }
    log(`\nsummary (mean of rounds; target: service >= 0.5 x bare, p99 < 50 ms at 16)`)
    log(`  clients   service buys/s  p50 ms  p99 ms   bare buys/s  p50 ms  p99 ms   ratio   CPU µs/buy service / bare`)
    for (const l of results.levels) {
      log(
        `  ${String(l.concurrency).padStart(7)}   ${String(round(l.service.rps, 1)).padStart(14)}  ${String(round(l.service.p50, 1)).padStart(6)}  ${
          String(round(l.service.p99, 1)).padStart(6)
        }` +
          `   ${String(round(l.bare.rps, 1)).padStart(11)}  ${String(round(l.bare.p50, 1)).padStart(6)}  ${String(round(l.bare.p99, 1)).padStart(6)}` +
          `   ${String(round(l.ratio, 2)).padStart(5)}   ${round(l.service.cpuMsPerBuy * 1000)} / ${round(l.bare.cpuMsPerBuy * 1000)}`
      )
    }
    if (opts.httpBare) {
      log(`\nthe HTTP hop (mean of rounds): bare-http is the bare's transaction behind a minimal node:http server`)
      log(`  clients   bare-http buys/s  p50 ms  p99 ms   bare-http / bare   service / bare-http   CPU µs/buy bare-http`)
      for (const l of results.levels) {
        log(
          `  ${String(l.concurrency).padStart(7)}   ${String(round(l.bareHttp.rps, 1)).padStart(16)}  ${String(round(l.bareHttp.p50, 1)).padStart(6)}  ${
            String(round(l.bareHttp.p99, 1)).padStart(6)
          }` +
            `   ${String(round(l.bareHttp.rps / l.bare.rps, 2)).padStart(16)}   ${String(round(l.service.rps / l.bareHttp.rps, 2)).padStart(19)}   ${
              round(l.bareHttp.cpuMsPerBuy * 1000)
            }`
        )
      }
    }
    const at16 = results.levels.find((l) => l.concurrency === 16)
    results.targets = {
      ratioAtLeastHalf: Object.fromEntries(results.levels.map((l) => [l.concurrency, l.ratio >= 0.5])),
      p99Under50At16: at16 ? at16.service.p99 < 50 : undefined
    }
    log(`targets: ratio >= 0.5: ${JSON.stringify(results.targets.ratioAtLeastHalf)}; p99 < 50 ms at 16: ${results.targets.p99Under50At16}`)

    // 4. profile
    if (opts.profile) {
      await service.stop()
      const dir = join(OUT, `profile-${stamp}`)
      mkdirSync(dir, { recursive: true })
      log(`\nprofile: the service at ${opts.profileAt} clients under node --cpu-prof`)
      ctx.service = await startService({
        databaseUrl: db.url,
        dataDir,
        extra: serviceExtra,
        nodeArgs: ["--cpu-prof", "--cpu-prof-dir", dir],
        readyTimeoutMs: 600_000,
        untilIdle: true
      })
      const r = await measure("service", ctx, opts.profileAt)
      await ctx.service.stop(120_000)
      ctx.service = undefined
      const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
      const summary = summarise(JSON.parse(readFileSync(join(dir, file), "utf8")), { top: 30, ...r.window })
      log(`profile: ${join(dir, file)} (the measured window only)`)
      printSummary(summary, log)
      results.profile = { file: join(dir, file), run: r, summary }
    }
  } finally {
    if (ctx.bare) await ctx.bare.stop()
    if (ctx.bareHttp) await ctx.bareHttp.process.stop()
    if (ctx.service) await ctx.service.stop()
    await ctx.serviceSampler?.end().catch(() => undefined)
    await ctx.bareSampler?.end().catch(() => undefined)
    await ctx.bareHttpSampler?.end().catch(() => undefined)
    await sleep(300)
    await db.drop().catch((e) => log(`could not drop ${db.name}: ${e.message}`))
    await dropBare().catch((e) => log(`could not drop ${bareDbName} or ${bareHttpDbName}: ${e.message}`))
    rmSync(dataDir, { recursive: true, force: true })
  }
  const file = join(OUT, `results-${stamp}.json`)
  for (const l of results.levels ?? []) for (const rs of Object.values(l.runs)) for (const r of rs) delete r.latencies
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n")
  log(`\nresults: ${file}`)
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
