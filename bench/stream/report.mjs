/**
 * What bench/stream prints: each phase's figures (delivery, latency, CPU per delivered change, the
 * cores of each process, whether every change was delivered), and the summary over the scenarios
 * with the ratio of the rounds' means for a scenario measured more than once.
 */
import { log, mean, round } from "../lib/harness.mjs"

export const printPhase = (label, r) => {
  log(
    `  ${label.padEnd(14)} delivered ${String(round(r.deliveredPerSecond)).padStart(9)} changes/s` +
      ` (${round(r.perClientPerSecond, 1)}/s per client; log ${round(r.loggedPerSecond, 1)}/s)` +
      Object.entries(r.latencies).map(([k, l]) =>
        `\n${" ".repeat(17)}latency ${k}: p50 ${round(l.p50, 1)} ms p90 ${round(l.p90, 1)} ms p99 ${round(l.p99, 1)} ms max ${round(l.max, 1)} ms`
      ).join("") +
      `\n${" ".repeat(17)}server CPU ${round(r.serverCpuUsPerChange, 3)} µs/delivered change` +
      (r.feedCpuUsPerChange !== undefined ? ` (feed only, idle churn cost subtracted: ${round(r.feedCpuUsPerChange, 3)})` : "") +
      `; ${round(r.mbPerSecond, 1)} MB/s to clients, ${round(r.framesPerSecond)} frames/s` +
      `\n${" ".repeat(17)}cores: machine ${r.cores.machine} = server ${r.cores.server} + clients ${r.cores.clients}` +
      ` + its postgres backends ${r.cores.postgres} + rest ${round(r.cores.machine - r.cores.server - r.cores.clients - r.cores.postgres, 2)}` +
      `\n${" ".repeat(17)}every change delivered: ${r.complete ? "yes" : "NO"} (open ${r.status.open}, closed ${r.status.closed}` +
      ` ${JSON.stringify(r.status.closeCodes)}, gaps ${r.status.gaps}, unexpected ${r.status.unexpected}` +
      `${r.reachedHead.ok ? "" : `, ${r.reachedHead.behind} clients never reached the head`})`
  )
}

/** The summary of all the scenarios: a row per server of each, then the rounds of each scenario measured more than once. */
export const printSummary = (results) => {
  log(`\nsummary (server CPU per delivered change; ratio = service / bare(buffer); target: all delivered, p99 < 250 ms, CPU ratio <= 1.25)`)
  log(`  scenario        server         log/s  delivered/s   per client/s   p50 ms   p99 ms   CPU µs/change  ratio  all delivered`)
  for (const s of results.scenarios) {
    const rows = [["service", s.service], ...Object.entries(s.bare).map(([k, v]) => [`bare ${k}`, v])]
    for (const [name, r] of rows) {
      log(
        `  ${`${s.clients}x${s.rate}`.padEnd(14)}  ${name.padEnd(12)}  ${String(round(r.loggedPerSecond)).padStart(5)}  ${
          String(round(r.deliveredPerSecond)).padStart(11)
        }  ${String(round(r.perClientPerSecond, 1)).padStart(13)}` +
          `  ${String(round(r.latency.p50, 1)).padStart(7)}  ${String(round(r.latency.p99, 1)).padStart(7)}  ${
            String(round(r.serverCpuUsPerChange, 3)).padStart(13)
          }` +
          `  ${name === "service" ? String(round(s.cpuRatio ?? NaN, 2)).padStart(5) : "     "}  ${r.complete ? "yes" : "NO"}`
      )
    }
  }
  // a scenario listed more than once is measured in rounds (service then bare, each round): the
  // ratio of the rounds' means is steadier than one round's, the bare's figure moving the most
  const rounds = new Map()
  for (const s of results.scenarios.filter((s) => s.cpuRatio !== undefined)) {
    const name = `${s.clients}x${s.rate}`
    rounds.set(name, [...(rounds.get(name) ?? []), s])
  }
  for (const [name, runs] of rounds) {
    if (runs.length < 2) continue
    const service = mean(runs.map((s) => s.service.serverCpuUsPerChange))
    const bare = mean(runs.map((s) => s.baselineCpuUsPerChange))
    const ratios = runs.map((s) => round(s.cpuRatio, 2))
    const p99s = runs.map((s) => round(s.service.latency.p99, 1))
    log(
      `  ${name} over ${runs.length} rounds: service ${round(service, 3)}, bare ${round(bare, 3)} µs/change: ratio of the means ${round(service / bare, 2)}` +
        ` (rounds ${ratios.join(", ")}); service p99 ${p99s.join(", ")} ms; all delivered in every round: ${
          runs.every((s) => s.service.complete) ? "yes" : "NO"
        }`
    )
  }
}
