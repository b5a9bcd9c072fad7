/**
 * bench/webhooks: webhook delivery against a bare script, on PostgreSQL (CONTRACT 4; issue 24).
 *
 * 1. Deliveries per second to a local receiver with 1 and 100 merchants: a backlog of events is
 *    written to the outbox in one statement (its commit wakes the sender) and drained, after a
 *    warm-up backlog of half the size that is not measured; beside it,
 *    in alternating rounds, bench/webhooks/bare.mjs POSTs the same signed bodies with the same
 *    concurrency (4 for one merchant: the per-merchant limit; 64 for 100: the per-process limit).
 *    Rate = events / (last arrival - commit). 1c: 10 live merchants beside 24 that no delivery
 *    reaches (no URL, refused, 500, hanging), against the live events alone (bench/webhooks/mix.mjs).
 * 2. End-to-end latency with an idle queue: one /buy at a time; each purchase event's arrival at the
 *    receiver minus its created_at (stamped before the transaction commits: an upper bound).
 * 3. Catalogue reads while a burst is delivered: `wrk -t1 -c50` on GET /items (50 items) for the
 *    window, alternating rounds without and with a burst of events draining.
 *
 * The service (all its threads) is pinned to core 0, the receiver, the bare script's peer and wrk to
 * core 1 (taskset). CPU per delivery is from /proc of the service process.
 *
 *   node bench/webhooks/run.mjs [--rounds 3] [--events1 4000] [--events100 20000] [--mixLive 10]
 *                               [--mixOthers 100] [--buys 200] [--burst 60000] [--duration 8]
 *                               [--parts deliveries,mixed,latency,reads]
 *                               [--nodeArgs "--cpu-prof --cpu-prof-dir=/tmp/prof"]
 *
 * `--parts` runs only the parts named; `--nodeArgs` adds node flags to the service (a profile).
 */
import { execFileSync, spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import {
  admin,
  argOptions,
  buildIfNeeded,
  connectClient,
  cpuMs,
  createDatabase,
  forkChild,
  log,
  machineInfo,
  percentileSorted,
  pgBackendCpu,
  pgCpuDelta,
  ROOT,
  round,
  rpc,
  sleep,
  startService,
  waitQuiet
} from "../lib/harness.mjs"
import { depositEvent } from "./bodies.mjs"
import { mixedThroughput } from "./mix.mjs"

const opts = argOptions(process.argv.slice(2), {
  rounds: 3,
  events1: 4000,
  events100: 20000,
  mixLive: 10,
  mixOthers: 100,
  buys: 200,
  burst: 60000,
  duration: 8,
  parts: "deliveries,mixed,latency,reads",
  nodeArgs: ""
})
const parts = new Set(opts.parts.split(","))
const OUT = join(ROOT, "bench/webhooks/out")
mkdirSync(OUT, { recursive: true })

const pin = (pid, core) => execFileSync("taskset", ["-a", "-c", "-p", String(core), String(pid)], { stdio: "ignore" })
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

buildIfNeeded()
const machine = await machineInfo()
log(JSON.stringify(machine))

const database = await createDatabase("bench_webhooks")
const receiverProc = forkChild(join(ROOT, "bench/webhooks/receiver.mjs"), [], process.env, "receiver")
const receiverReady = await new Promise((resolve) => receiverProc.child.once("message", resolve))
pin(receiverProc.child.pid, 1)
const receiver = rpc(receiverProc)
const receiverUrl = (path) => `http://127.0.0.1:${receiverReady.port}${path}`

const service = await startService({
  databaseUrl: database.url,
  dataDir: join(OUT, `data-${process.pid}`),
  extra: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", SIM_CHURN_PER_SECOND: "0", SIM_TIME_SCALE: "0.05" },
  untilIdle: true,
  nodeArgs: opts.nodeArgs.split(" ").filter((arg) => arg !== "")
})
pin(service.child.pid, 0)
const db = await connectClient(database.url)

const merchants = []
for (let i = 0; i < 100; i++) {
  const m = await admin(service, "/admin/merchants", { name: `hook-${i}`, webhook_url: receiverUrl(`/m/${i}`) })
  merchants.push({ id: m.merchant_id, secret: m.webhook_secret, url: receiverUrl(`/m/${i}`), apiKey: m.api_key })
}

/** `n` balance.deposited-shaped events spread over the first `count` merchants, as the outbox stores them. */
const makeEvents = (n, count) =>
  Array.from({ length: n }, (_, i) => {
    const m = merchants[i % count]
    return { ...depositEvent(), merchantId: m.id, url: m.url, secret: m.secret }
  })

const insertEvents = (events) =>
  db.query(
    `INSERT INTO webhook_events (id, merchant_id, event_type, body)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[])`,
    [events.map((e) => e.id), events.map((e) => e.merchantId), events.map((e) => e.type), events.map((e) => e.body)]
  )

const waitArrivals = async (n, timeoutMs = 600_000) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const status = await receiver({ op: "status" })
    if (status.count >= n) return status
    if (Date.now() > deadline) throw new Error(`only ${status.count} of ${n} arrived`)
    await sleep(20)
  }
}

// ---- 1. deliveries per second ---------------------------------------------------------------

const throughput = async (merchantCount, n, concurrency) => {
  // a warm-up, not measured: the first deliveries also compile the sender's code and prepare its
  // statements on each pooled connection (as the HTTP benches warm up for 2 s)
  await receiver({ op: "reset" })
  await insertEvents(makeEvents(n / 2, merchantCount))
  await waitArrivals(n / 2)
  await sleep(500)
  const rows = []
  for (let round_ = 1; round_ <= opts.rounds; round_++) {
    const events = makeEvents(n, merchantCount)
    await waitQuiet(`service round ${round_}`)
    await receiver({ op: "reset" })
    const cpu0 = cpuMs(service.child.pid)
    const receiverCpu0 = cpuMs(receiverProc.child.pid)
    const pg0 = await pgBackendCpu(database.name)
    const t0 = Date.now()
    await insertEvents(events)
    const status = await waitArrivals(n)
    const serviceMs = status.last - t0
    const cpu = cpuMs(service.child.pid) - cpu0
    const receiverCpu = cpuMs(receiverProc.child.pid) - receiverCpu0
    const pgCpu = pgCpuDelta(pg0, await pgBackendCpu(database.name))
    // let the last results be recorded before the next round
    await sleep(500)

    const file = join(OUT, `bare-${merchantCount}.jsonl`)
    writeFileSync(file, makeEvents(n, merchantCount).map((e) => JSON.stringify(e)).join("\n") + "\n")
    await waitQuiet(`bare round ${round_}`)
    await receiver({ op: "reset" })
    const bare = spawnSync("taskset", ["-c", "0", process.execPath, join(ROOT, "bench/webhooks/bare.mjs"), file, String(concurrency)], { encoding: "utf8" })
    if (bare.status !== 0) throw new Error(`bare failed: ${bare.stderr}`)
    const bareStatus = await waitArrivals(n)
    const bareMs = JSON.parse(bare.stdout).ms
    const row = {
      merchants: merchantCount,
      round: round_,
      servicePerSecond: round((n * 1000) / serviceMs),
      barePerSecond: round((n * 1000) / bareMs),
      serviceCpuUsPerDelivery: round((cpu * 1000) / n),
      postgresCpuUsPerDelivery: round((pgCpu * 1000) / n),
      receiverCpuUsPerDelivery: round((receiverCpu * 1000) / n),
      bareArrived: bareStatus.count
    }
    row.ratio = round(row.servicePerSecond / row.barePerSecond, 2)
    log(
      `  ${merchantCount} merchant(s), round ${round_}: service ${row.servicePerSecond}/s (CPU per delivery: service ${row.serviceCpuUsPerDelivery} µs, PostgreSQL ${row.postgresCpuUsPerDelivery} µs, receiver ${row.receiverCpuUsPerDelivery} µs), bare ${row.barePerSecond}/s, ratio ${row.ratio}`
    )
    rows.push(row)
  }
  return {
    merchants: merchantCount,
    events: n,
    concurrency,
    serviceMedian: median(rows.map((r) => r.servicePerSecond)),
    bareMedian: median(rows.map((r) => r.barePerSecond)),
    ratioOfMedians: round(median(rows.map((r) => r.servicePerSecond)) / median(rows.map((r) => r.barePerSecond)), 2),
    rows
  }
}

const deliveries = async () => {
  log("\n1. deliveries per second")
  return { one: await throughput(1, opts.events1, 4), hundred: await throughput(100, opts.events100, 64) }
}

const mixed = () => {
  log(`\n1c. deliveries per second of ${opts.mixLive} live merchants beside unreachable ones`)
  const bench = { service, db, databaseName: database.name, receiver, receiverUrl, makeEvents, insertEvents, waitArrivals }
  return mixedThroughput(bench, { rounds: opts.rounds, live: opts.mixLive, events: opts.events100, othersEach: opts.mixOthers })
}

// ---- 2. end-to-end latency, idle queue ------------------------------------------------------

const buyer = merchants[0]
const endToEnd = async () => {
  log("\n2. latency from a purchase's state change to its webhook, idle queue")
  await admin(service, "/admin/deposits", { merchant_id: buyer.id, network: "tron", amount: 100_000, tx_id: `fund-${randomUUID()}` })
  const items = Array.from({ length: opts.buys }, (_, i) => ({
    market_hash_name: `Bench Hook Item ${i}`,
    price: 1,
    delivery_type: "instant",
    is_stat_trak: false,
    is_souvenir: false,
    stickers: []
  }))
  const loaded = await admin(service, "/admin/catalogue/items", { items }, "PUT")
  await sleep(2000)
  await receiver({ op: "reset", latencies: true })
  for (const itemId of loaded.ids) {
    const res = await fetch(`${service.baseUrl}/api/v1/merchant/buy`, {
      method: "POST",
      headers: { authorization: `Bearer ${buyer.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        item_id: itemId,
        max_price: 5,
        custom_id: `bench-${randomUUID()}`,
        target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
      })
    })
    if (res.status !== 201) throw new Error(`buy: ${res.status} ${await res.text()}`)
    await sleep(50)
  }
  // every purchase's four events (created, processing, sent_to_steam, completed)
  await waitArrivals(opts.buys * 4, 120_000)
  const { latencies } = await receiver({ op: "status", latencies: true })
  const byType = {}
  for (const { type, ms } of latencies) (byType[type] ??= []).push(ms)
  const latency = Object.fromEntries(
    Object.entries(byType).map(([type, xs]) => {
      const sorted = [...xs].sort((a, b) => a - b)
      return [type, { n: xs.length, p50: percentileSorted(sorted, 50), p99: percentileSorted(sorted, 99), max: sorted[sorted.length - 1] }]
    })
  )
  for (const [type, l] of Object.entries(latency)) log(`  ${type}: n ${l.n}, p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms`)
  const allSorted = latencies.map((l) => l.ms).sort((a, b) => a - b)
  const all = { n: allSorted.length, p50: percentileSorted(allSorted, 50), p99: percentileSorted(allSorted, 99) }
  log(`  all purchase events: p50 ${all.p50} ms, p99 ${all.p99} ms`)
  return { byType: latency, all }
}

// ---- 3. catalogue reads during a burst ------------------------------------------------------

const wrk = (seconds) => {
  const run = spawnSync("taskset", [
    "-c",
    "1",
    "wrk",
    "-t1",
    "-c50",
    `-d${seconds}s`,
    "--latency",
    "-H",
    `Authorization: Bearer ${buyer.apiKey}`,
    `${service.baseUrl}/api/v1/merchant/items?limit=50`
  ], { encoding: "utf8" })
  const rate = Number(run.stdout.match(/Requests\/sec:\s+([\d.]+)/)?.[1])
  const non2xx = Number(run.stdout.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0)
  return { rate, non2xx }
}
const readsDuringBurst = async () => {
  log("\n3. GET /items (50 items) with wrk -t1 -c50, without and with a burst of deliveries")
  const rows = []
  for (let round_ = 1; round_ <= opts.rounds; round_++) {
    await waitQuiet(`reads round ${round_}`)
    const quiet = wrk(opts.duration)
    await receiver({ op: "reset" })
    await insertEvents(makeEvents(opts.burst, 100))
    await sleep(200)
    const during = wrk(opts.duration)
    const status = await receiver({ op: "status" })
    const drained = status.count
    await waitArrivals(opts.burst)
    const row = {
      round: round_,
      quiet: round(quiet.rate),
      duringBurst: round(during.rate),
      deliveredDuringWindow: drained,
      non2xx: quiet.non2xx + during.non2xx
    }
    row.ratio = round(row.duringBurst / row.quiet, 2)
    log(`  round ${round_}: ${row.quiet} req/s quiet, ${row.duringBurst} req/s during the burst (${drained} deliveries by then), ratio ${row.ratio}`)
    rows.push(row)
  }
  return { rows, ratioOfMedians: round(median(rows.map((r) => r.duringBurst)) / median(rows.map((r) => r.quiet)), 2) }
}

const summary = {
  at: new Date().toISOString(),
  machine,
  deliveries: parts.has("deliveries") ? await deliveries() : undefined,
  mixed: parts.has("mixed") ? await mixed() : undefined,
  latency: parts.has("latency") ? await endToEnd() : undefined,
  reads: parts.has("reads") ? await readsDuringBurst() : undefined
}
writeFileSync(join(OUT, `run-${Date.now()}.json`), JSON.stringify(summary, null, 2))
log("\nsummary")
if (summary.deliveries !== undefined) {
  const { one, hundred } = summary.deliveries
  log(`  deliveries/s, 1 merchant:    service ${one.serviceMedian}, bare ${one.bareMedian}, ratio ${one.ratioOfMedians} (concurrency 4)`)
  log(`  deliveries/s, 100 merchants: service ${hundred.serviceMedian}, bare ${hundred.bareMedian}, ratio ${hundred.ratioOfMedians} (concurrency 64)`)
}
if (summary.mixed !== undefined) {
  const m = summary.mixed
  log(`  deliveries/s, ${m.live} live merchants beside ${m.unreachable} unreachable: ${m.mixedMedian}, all-live ${m.allLiveMedian}, ratio ${m.ratioOfMedians}`)
  log(`    (target: at least 0.8; the sender's fibers restarted ${m.senderRestarts} times)`)
}
if (summary.latency !== undefined) log(`  latency, purchase events (idle queue): p50 ${summary.latency.all.p50} ms, p99 ${summary.latency.all.p99} ms`)
if (summary.reads !== undefined) log(`  /items req/s during a burst / without: ${summary.reads.ratioOfMedians}`)

await db.end()
await service.stop()
await receiverProc.stop()
await database.drop()
