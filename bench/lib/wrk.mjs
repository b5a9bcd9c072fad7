/** HTTP load with wrk, the method every HTTP figure uses (autocannon tops out below a bare server's rate). */
import { spawnSync } from "node:child_process"

/** wrk's latency line ("99%   12.34ms") in ms. */
const wrkLatencyMs = (stdout, percentile) => {
  const match = stdout.match(new RegExp(`^\\s*${percentile}%\\s+([\\d.]+)(us|ms|s)\\s*$`, "m"))
  if (match === null) return Number.NaN
  const value = Number(match[1])
  return match[2] === "us" ? value / 1000 : match[2] === "s" ? value * 1000 : value
}

/**
 * One `wrk -t1 -c<connections> --latency` run pinned to `core` (taskset). Requests/s, p50 and p99
 * (ms), and the answers that were not 2xx or 3xx.
 */
export const wrkLoad = ({ url, headers = {}, seconds, connections = 50, core = 1 }) => {
  const args = ["-c", String(core), "wrk", "-t1", `-c${connections}`, `-d${seconds}s`, "--latency"]
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`)
  const run = spawnSync("taskset", [...args, url], { encoding: "utf8" })
  if (run.status !== 0) throw new Error(`wrk failed (install it with apt-get install wrk): ${run.stderr || run.error}`)
  const requests = Number(run.stdout.match(/(\d+) requests in/)?.[1])
  return {
    rps: Number(run.stdout.match(/Requests\/sec:\s+([\d.]+)/)?.[1]),
    requests,
    p50: wrkLatencyMs(run.stdout, 50),
    p99: wrkLatencyMs(run.stdout, 99),
    non2xx: Number(run.stdout.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0)
  }
}
