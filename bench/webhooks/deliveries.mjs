/**
 * bench/webhooks, part 1: deliveries per second to the local receiver with 1 and 100 merchants, a
 * backlog written to the outbox in one statement (its commit wakes the sender) and drained, after a
 * warm-up backlog of half the size; beside it, in alternating rounds, bare.mjs POSTs the same
 * signed bodies with the same concurrency. Rate = events / (last arrival - commit). And 1c: live
 * merchants beside unreachable ones (mix.mjs).
 */
import { spawnSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { cpuMs, log, pgBackendCpu, pgCpuDelta, ROOT, round, sleep, upperMedian as median, waitQuiet } from "../lib/harness.mjs"
import { mixedThroughput } from "./mix.mjs"

const throughput = async (opts, bench, merchantCount, n, concurrency) => {
  const { receiver, receiverProc, service, insertEvents, makeEvents, waitArrivals } = bench
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
    const pg0 = await pgBackendCpu(bench.databaseName)
    const t0 = Date.now()
    await insertEvents(events)
    const status = await waitArrivals(n)
    const serviceMs = status.last - t0
    const cpu = cpuMs(service.child.pid) - cpu0
    const receiverCpu = cpuMs(receiverProc.child.pid) - receiverCpu0
    const pgCpu = pgCpuDelta(pg0, await pgBackendCpu(bench.databaseName))
    // let the last results be recorded before the next round
    await sleep(500)

    const file = join(bench.out, `bare-${merchantCount}.jsonl`)
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

export const deliveries = async (opts, bench) => {
  log("\n1. deliveries per second")
  return { one: await throughput(opts, bench, 1, opts.events1, 4), hundred: await throughput(opts, bench, 100, opts.events100, 64) }
}

export const mixed = (opts, bench) => {
  log(`\n1c. deliveries per second of ${opts.mixLive} live merchants beside unreachable ones`)
  return mixedThroughput(bench, { rounds: opts.rounds, live: opts.mixLive, events: opts.events100, othersEach: opts.mixOthers })
}
