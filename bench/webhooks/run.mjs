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
 *
 * The parts: the setup (setup.mjs), deliveries per second (deliveries.mjs, mix.mjs), the latency
 * (latency.mjs), the reads during a burst (reads.mjs).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { argOptions, buildIfNeeded, log, machineInfo, ROOT } from "../lib/harness.mjs"
import { deliveries, mixed } from "./deliveries.mjs"
import { endToEnd } from "./latency.mjs"
import { readsDuringBurst } from "./reads.mjs"
import { setUp } from "./setup.mjs"

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

buildIfNeeded()
const machine = await machineInfo()
log(JSON.stringify(machine))

const bench = await setUp(opts, OUT)

const summary = {
  at: new Date().toISOString(),
  machine,
  deliveries: parts.has("deliveries") ? await deliveries(opts, bench) : undefined,
  mixed: parts.has("mixed") ? await mixed(opts, bench) : undefined,
  latency: parts.has("latency") ? await endToEnd(opts, bench) : undefined,
  reads: parts.has("reads") ? await readsDuringBurst(opts, bench) : undefined
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

await bench.tearDown()
