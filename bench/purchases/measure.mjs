/**
 * One measured run of bench/purchases: a variant (the service, the bare pg script, or the bare
 * behind HTTP) at a number of clients, after waiting for a quiet machine: buys per second,
 * latency, errors, the CPU time per buy of the server process, the cores of it, its PostgreSQL
 * backends, the load generator and the machine, the WAL per buy and the backends' states; printed.
 */
import { CLK_TCK, cpuMs, log, machineTicks, percentileSorted, pgBackendCpu, pgCpuDelta, round, waitQuiet, withAdminClient } from "../lib/harness.mjs"
import { loadService } from "./load.mjs"
import { walDelta, walStats } from "./postgres-activity.mjs"

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

export const measure = async (opts, which, ctx, concurrency) => {
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
