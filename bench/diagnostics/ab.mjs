/**
 * bench/diagnostics/ab: two variants of the service (A and B: settings, or builds) under the same
 * POST /buy load, in alternating windows of the same run, to tell a change of a few per cent on a
 * machine whose speed drifts by more than that from one window to the next (bench/RESULTS.md:
 * single windows of one build ranged from 256 to 482 buys/s). No bare baseline: run.mjs gives the
 * ratio; this gives B against A.
 *
 *   node bench/diagnostics/ab.mjs [--clients 1] [--merchants 1] [--windows 6] [--seconds 4] [--warmup 2]
 *                               [--catalogue 30000] [--A '{"ENV":"value"}'] [--B '{...}']
 *                               [--entryA dist-a/src/main.js] [--entryB ...] [--workerA deferred] [--workerB ...]
 *                               [--nodeArgsA '--trace-gc'] [--nodeArgsB ...] [--outputTo dir]
 *
 * Both services run at once, each on its own database and catalogue (no churn, SIM_TIME_SCALE=100),
 * with --merchants funded merchants; each is loaded in turn (A B, B A, A B, ...) by --clients
 * keep-alive connections (bench/lib/http-connection.mjs; client i buys for merchant i mod M, every
 * request a distinct item and custom_id) for --warmup then --seconds. The first pair is a warm-up
 * and is dropped. Printed: each window's buys/s, the service's CPU per buy and latencies, the means,
 * and B/A for each pair. --A/--B: environment of each service (JSON); --entryA/--entryB: a service
 * entry other than the build's (e.g. a copy of dist/ made before a change); --workerX deferred:
 * that service's purchase worker held off new purchases (harness `deferPurchaseWorker`);
 * --nodeArgsX: node flags for that service beside npm start's; --outputTo: each service's output
 * (stdout and stderr, e.g. a --trace-gc log) written there as A.log and B.log at the end.
 *
 * Order bias: on the AMD EPYC microVM, whichever variant is B measured about 6 % more buys/s than
 * the same build would as A (bench/RESULTS.md, "2026-11-25, sixth session"; cause unknown). Run
 * both orders (swap --entryA/--entryB, or --A/--B) and take the geometric mean of B/A and 1/(B/A).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import {
  argOptions,
  connectClient,
  cpuMs,
  createDatabase,
  deferPurchaseWorker,
  fundedMerchant,
  log,
  mean,
  percentileSorted,
  round,
  sleep,
  startService
} from "../lib/harness.mjs"
import { openConnection } from "../lib/http-connection.mjs"

const opts = argOptions(process.argv.slice(2), {
  clients: 1,
  merchants: 1,
  windows: 6,
  seconds: 4,
  warmup: 2,
  catalogue: 30000,
  A: "{}",
  B: "{}",
  entryA: "",
  entryB: "",
  workerA: "on",
  workerB: "on",
  nodeArgsA: "",
  nodeArgsB: "",
  outputTo: ""
})
const TRADE_URL = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"

const setUp = async (name) => {
  const db = await createDatabase(`mps_bench_ab${name.toLowerCase()}`)
  const dataDir = mkdtempSync(join(tmpdir(), "mps-ab-"))
  const entry = opts[`entry${name}`]
  const service = await startService({
    databaseUrl: db.url,
    dataDir,
    ...(entry === "" ? {} : { entry: resolve(entry) }),
    nodeArgs: opts[`nodeArgs${name}`].split(/\s+/).filter(Boolean),
    extra: { SIM_CATALOGUE_SIZE: String(opts.catalogue), SIM_CHURN_PER_SECOND: "0", SIM_TIME_SCALE: "100", ...JSON.parse(opts[name]) },
    readyTimeoutMs: 600_000,
    untilIdle: true
  })
  const keys = []
  for (let m = 0; m < Number(opts.merchants); m++) keys.push((await fundedMerchant(service, `ab${name}${m}`, 4_000_000)).api_key)
  const client = await connectClient(db.url)
  const items = (await client.query("SELECT id FROM catalogue_items WHERE status = 'active' ORDER BY random()")).rows.map((r) => r.id)
  if (opts[`worker${name}`] === "deferred") await deferPurchaseWorker(client)
  await client.end()
  const connections = []
  for (let c = 0; c < Number(opts.clients); c++) connections.push(await openConnection("127.0.0.1", service.port))
  return { name, db, dataDir, service, keys, items, connections, next: 0, windows: [] }
}

/** One window of load on one variant: every client buys, one request at a time, until it ends. */
const measureWindow = async (variant, kept) => {
  let stop = false
  let measuring = false
  const latencies = []
  const client = async (c) => {
    const key = variant.keys[c % variant.keys.length]
    while (!stop) {
      const i = variant.next++
      if (i >= variant.items.length) throw new Error(`${variant.name}: out of items after ${i}; raise --catalogue`)
      const started = performance.now()
      const response = await variant.connections[c].request("POST", "/api/v1/merchant/buy", {
        authorization: `Bearer ${key}`,
        "content-type": "application/json"
      }, JSON.stringify({ item_id: variant.items[i], max_price: 100000, custom_id: `ab-${i}`, target_trade_url: TRADE_URL }))
      if (response.status !== 201) throw new Error(`${variant.name}: ${response.status} ${response.body}`)
      if (measuring) latencies.push(performance.now() - started)
    }
  }
  const clients = variant.connections.map((_, c) => client(c))
  await sleep(Number(opts.warmup) * 1000)
  measuring = true
  const cpu0 = cpuMs(variant.service.child.pid)
  const t0 = performance.now()
  await sleep(Number(opts.seconds) * 1000)
  const cpu = cpuMs(variant.service.child.pid) - cpu0
  const seconds = (performance.now() - t0) / 1000
  measuring = false
  stop = true
  await Promise.all(clients)
  latencies.sort((a, b) => a - b)
  const window = {
    rate: latencies.length / seconds,
    cpuUsPerBuy: (cpu * 1000) / latencies.length,
    mean: mean(latencies),
    p50: percentileSorted(latencies, 50),
    p99: percentileSorted(latencies, 99)
  }
  if (kept) variant.windows.push(window)
  log(
    `  ${variant.name}${kept ? " " : " (warm-up)"}  ${round(window.rate, 1)} buys/s  CPU ${Math.round(window.cpuUsPerBuy)} µs/buy  mean ${
      round(window.mean, 2)
    } ms  p50 ${round(window.p50, 2)}  p99 ${round(window.p99, 2)}`
  )
  await sleep(1000)
}

const main = async () => {
  log(`bench/diagnostics/ab ${new Date().toISOString()}`)
  log(`settings: ${JSON.stringify(opts)}`)
  const a = await setUp("A")
  const b = await setUp("B")
  try {
    await measureWindow(a, false)
    await measureWindow(b, false)
    for (let w = 0; w < Number(opts.windows); w++) {
      const [first, second] = w % 2 === 0 ? [a, b] : [b, a]
      await measureWindow(first, true)
      await measureWindow(second, true)
    }
    const avg = (variant, key) => mean(variant.windows.map((w) => w[key]))
    for (const v of [a, b]) {
      log(
        `${v.name}: ${round(avg(v, "rate"), 1)} buys/s, CPU ${Math.round(avg(v, "cpuUsPerBuy"))} µs/buy, mean ${round(avg(v, "mean"), 2)} ms, p99 ${
          round(avg(v, "p99"), 1)
        } ms (means of ${v.windows.length} windows)`
      )
    }
    log(`B/A buys/s: ${round(avg(b, "rate") / avg(a, "rate"), 3)}; by pair: ${a.windows.map((w, i) => round(b.windows[i].rate / w.rate, 2)).join(" ")}`)
  } finally {
    for (const v of [a, b]) {
      if (opts.outputTo !== "") {
        mkdirSync(opts.outputTo, { recursive: true })
        writeFileSync(join(opts.outputTo, `${v.name}.log`), v.service.output())
      }
      v.connections.forEach((c) => c.close())
      await v.service.stop()
      await v.db.drop()
      rmSync(v.dataDir, { recursive: true, force: true })
    }
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
