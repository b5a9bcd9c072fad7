/**
 * bench/catalogue's summary, per size: the resident size per 1,000,000 items over the baseline,
 * the service against the bare server on each endpoint, and the dump regenerations' stalls. Adds
 * rssPerMillion to each size's results.
 */
import { fmtS } from "./figures.mjs"
import { ENDPOINTS } from "./http.mjs"
import { log, mib, round } from "./lib.mjs"

export const printSummary = (results, sizes) => {
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
}
