/**
 * bench/webhooks, part 3: catalogue reads while a burst is delivered: `wrk -t1 -c50` on GET /items
 * (50 items) for the window, alternating rounds without and with a burst of events draining.
 */
import { log, round, sleep, upperMedian as median, waitQuiet, wrkLoad } from "../lib/harness.mjs"

/** One wrk run on /items as the first merchant, pinned to core 1: its rate and its answers other than 2xx or 3xx. */
const wrk = ({ service, merchants }, seconds) => {
  const { rps, non2xx } = wrkLoad({
    url: `${service.baseUrl}/api/v1/merchant/items?limit=50`,
    headers: { Authorization: `Bearer ${merchants[0].apiKey}` },
    seconds,
    connections: 50,
    core: 1
  })
  return { rate: rps, non2xx }
}

export const readsDuringBurst = async (opts, bench) => {
  const { receiver, insertEvents, makeEvents, waitArrivals } = bench
  log("\n3. GET /items (50 items) with wrk -t1 -c50, without and with a burst of deliveries")
  const rows = []
  for (let round_ = 1; round_ <= opts.rounds; round_++) {
    await waitQuiet(`reads round ${round_}`)
    const quiet = wrk(bench, opts.duration)
    await receiver({ op: "reset" })
    await insertEvents(makeEvents(opts.burst, 100))
    await sleep(200)
    const during = wrk(bench, opts.duration)
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
