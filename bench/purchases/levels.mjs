/**
 * bench/purchases' levels of concurrency: each level's rounds, alternating the variants' order
 * (service, bare, bare-http, then the reverse), and their means; the summary over the levels
 * against the targets (service >= 0.5 x bare, p99 < 50 ms at 16) and the HTTP hop's share.
 */
import { log, mean, round, sleep } from "../lib/harness.mjs"
import { measure } from "./measure.mjs"

/** The level of `c` clients: its rounds' runs by variant, their means and the ratio service / bare. */
export const measureLevel = async (opts, ctx, variants, c) => {
  log(`\n${c} concurrent client(s): ${opts.warmup} s warm-up + ${opts.duration} s, ${opts.rounds} round(s)`)
  const runs = Object.fromEntries(variants.map((which) => [which, []]))
  for (let i = 0; i < opts.rounds; i++) {
    for (const which of i % 2 === 0 ? variants : [...variants].reverse()) {
      runs[which].push(await measure(opts, which, ctx, c))
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
  return { concurrency: c, service: s, bare: b, bareHttp: h, ratio: s.rps / b.rps, runs }
}

/** Prints the levels' summary and sets `results.targets`. */
export const summariseLevels = (opts, results) => {
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
}
