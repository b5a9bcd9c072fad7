/**
 * bench/cabinet's summary of the sign-in flood against its targets: the reads' rate (and p99)
 * during the flood against the quiet windows', the resident size's peak, the sign-ins' answers by
 * status and their latency, the password hashes computed and the sign-ins the brakes refused.
 */
import { log, mean, percentileSorted, round } from "../lib/harness.mjs"

export const printSummary = (opts, { quietBefore, flooded, quietAfter, hashes, refused }) => {
  const counts = {}
  for (const { status } of flooded.signIns) counts[status] = (counts[status] ?? 0) + 1
  const latencies = (status) => flooded.signIns.filter((s) => s.status === status).map((s) => s.ms).sort((a, b) => a - b)
  const quietRate = mean([quietBefore.read.rate, quietAfter.read.rate])
  const quietRss = Math.max(...quietBefore.rss)
  const floodRss = Math.max(...flooded.rss)
  const fivexx = Object.entries(counts).filter(([status]) => /^5/.test(status)).reduce((a, [, n]) => a + n, 0)
  const readTimeouts = quietBefore.read.timeouts + flooded.read.timeouts + quietAfter.read.timeouts
  const readsNot200 = quietBefore.read.non2xx + flooded.read.non2xx + quietAfter.read.non2xx

  log("\nsummary")
  log(
    `  reads during the flood / quiet: ${round(flooded.read.rate / quietRate, 3)} (${round(flooded.read.rate)} against ${
      round(quietRate)
    }/s, the mean of the quiet windows) — target >= 0.8`
  )
  if (!opts.saturate) {
    log(
      `  reads' p99 during the flood ${round(flooded.read.p99, 2)} ms against ${round(quietBefore.read.p99, 2)} and ${round(quietAfter.read.p99, 2)} ms quiet`
    )
  }
  log(
    `  RSS: peak ${round(floodRss)} MB during the flood against ${round(quietRss)} MB (the quiet window's peak): ${
      round(floodRss - quietRss)
    } MB more — target within 100`
  )
  log(`  sign-ins sent: ${flooded.signIns.length}; answers: ${JSON.stringify(counts)} — target: no 5xx (${fivexx}), no timeouts (${counts.timeout ?? 0})`)
  for (const status of [401, 429]) {
    const ms = latencies(status)
    if (ms.length > 0) {
      log(`  ${status} answered in p50 ${round(percentileSorted(ms, 50), 1)} ms, p99 ${round(percentileSorted(ms, 99), 1)} ms, max ${round(ms.at(-1), 1)} ms`)
    }
  }
  log(`  password hashes computed: ${hashes} (${round(hashes / opts.duration, 1)}/s); refused unchecked, by brake: ${JSON.stringify(refused)}`)
  log(`  reads not 200: ${readsNot200}, read timeouts: ${readTimeouts}`)
}
