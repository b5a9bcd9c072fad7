/**
 * bench/http's load: GET /api/v1/merchant/balance of the bench's merchant under `wrk -t1` pinned to
 * core 1, against each server pinned to core 0 (the service on PostgreSQL, the bare baseline, the
 * service on PGlite), one at a time, in alternating rounds after a warm-up each; requests/s, p50,
 * p99 and the server's CPU time per request, and the ratios of the medians. With --profile, one
 * more run of the service under `node --cpu-prof`.
 */
import { mkdirSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { admin, CLK_TCK, cpuMs, log, machineTicks, median, pinProcess, round, sleep, startService, waitQuiet, wrkLoad } from "../lib/harness.mjs"
import { printSummary, summarise } from "./cpuprofile-summary.mjs"

const BALANCE_PATH = "/api/v1/merchant/balance"

/** The bench's merchant on a service: a legacy address and a funded balance; its API key. */
export const benchMerchant = async (target) => {
  const merchant = await admin(target, "/admin/merchants", { name: "bench-merchant", webhook_url: null })
  await admin(target, `/admin/merchants/${merchant.merchant_id}/legacy-addresses`, { trc20: "TBenchLegacyTrc20Address000000000", bep20: null }, "PUT")
  await admin(target, "/admin/deposits", { merchant_id: merchant.merchant_id, network: "tron", amount: 1010.1, tx_id: "bench-initial-funding" })
  return merchant.api_key
}

export const fetchBalance = async (baseUrl, apiKey) => {
  const res = await fetch(`${baseUrl}${BALANCE_PATH}`, { headers: { authorization: `Bearer ${apiKey}` } })
  return { status: res.status, contentType: res.headers.get("content-type"), headers: res.headers, body: Buffer.from(await res.arrayBuffer()) }
}

const wrk = (opts, baseUrl, apiKey, seconds) =>
  wrkLoad({ url: `${baseUrl}${BALANCE_PATH}`, headers: { authorization: `Bearer ${apiKey}` }, seconds, connections: opts.connections, core: 1 })

/**
 * Warm-up (discarded), then a measured run of wrk pinned to core 1 against a server pinned to core
 * 0; with the server process's CPU time (all its threads) over the run.
 */
const measure = async (opts, target, label) => {
  const busyBefore = await waitQuiet(label, { maxSeconds: opts.waitQuiet, quietBusy: opts.quietBusy })
  wrk(opts, target.baseUrl, target.apiKey, opts.warmup)
  await sleep(200)
  const cpuBefore = cpuMs(target.child.pid)
  const ticksBefore = machineTicks()
  // the measured run on the monotonic clock in µs, the clock of a CPU profile (--profile)
  const from = Number(process.hrtime.bigint() / 1000n)
  const result = wrk(opts, target.baseUrl, target.apiKey, opts.duration)
  const to = Number(process.hrtime.bigint() / 1000n)
  const cpuAfter = cpuMs(target.child.pid)
  const ticksAfter = machineTicks()
  const machineBusyMs = ((ticksAfter.busy - ticksBefore.busy) * 1000) / CLK_TCK
  return {
    ...result,
    cpuMsPerRequest: (cpuAfter - cpuBefore) / result.requests,
    cpuUtilisation: (cpuAfter - cpuBefore) / (opts.duration * 1000),
    machineBusyBefore: busyBefore,
    /** Cores busy over the run: all, and the server under test. */
    coresBusy: machineBusyMs / (opts.duration * 1000),
    coresServer: (cpuAfter - cpuBefore) / (opts.duration * 1000),
    window: { from, to }
  }
}

const printRun = (label, r) =>
  log(
    `  ${label.padEnd(8)} ${String(round(r.rps)).padStart(7)} req/s  p50 ${String(round(r.p50, 2)).padStart(5)} ms  p99 ${
      String(round(r.p99, 2)).padStart(6)
    } ms` +
      `  cpu ${round(r.cpuMsPerRequest * 1000)} µs/req (${round(r.cpuUtilisation * 100)} % of a core)  non2xx ${r.non2xx}` +
      `\n           cores busy: all ${round(r.coresBusy, 2)} = server ${round(r.coresServer, 2)} + rest (wrk, PostgreSQL, others) ${
        round(r.coresBusy - r.coresServer, 2)
      }; machine ${round(r.machineBusyBefore * 100)} % busy just before`
  )

/** `opts.rounds` rounds over the servers, each pinned to core 0 (worker threads too; wrk on core 1), and their medians. */
export const loadRounds = async (opts, targets) => {
  for (const target of Object.values(targets)) pinProcess(target.child.pid, 0)
  log(`\nload: wrk -t1 -c${opts.connections}, ${opts.warmup} s warm-up + ${opts.duration} s measured, ${opts.rounds} rounds (alternating)`)
  const runs = { service: [], bare: [], pglite: [] }
  for (let i = 0; i < opts.rounds; i++) {
    const order = i % 2 === 0 ? ["service", "bare", "pglite"] : ["pglite", "bare", "service"]
    log(`round ${i + 1}`)
    for (const which of order) {
      const r = await measure(opts, targets[which], which)
      if (r.non2xx > 0) log(`  WARNING: ${which} had ${r.non2xx} answers other than 2xx or 3xx`)
      runs[which].push(r)
      printRun(which, r)
    }
  }
  const agg = (rs) => ({
    rps: median(rs.map((r) => r.rps)),
    p99: median(rs.map((r) => r.p99)),
    p50: median(rs.map((r) => r.p50)),
    cpuMsPerRequest: median(rs.map((r) => r.cpuMsPerRequest))
  })
  const [s, b, l] = [agg(runs.service), agg(runs.bare), agg(runs.pglite)]
  const ratio = s.rps / b.rps
  const load = { runs, service: s, bare: b, pglite: l, ratio, cpuRatio: b.cpuMsPerRequest / s.cpuMsPerRequest, pgliteRatio: l.rps / s.rps }
  log(`\n  medians       req/s    p50 ms   p99 ms   CPU µs/req`)
  for (const [label, x] of [["service", s], ["bare", b], ["pglite", l]]) {
    log(
      `  ${label.padEnd(8)}  ${String(round(x.rps)).padStart(8)}  ${String(round(x.p50, 2)).padStart(7)}  ${String(round(x.p99, 2)).padStart(7)}  ${
        String(round(x.cpuMsPerRequest * 1000)).padStart(9)
      }`
    )
  }
  log(`  ratio service/bare (PostgreSQL): ${round(ratio, 3)} (target >= 0.5) -> ${ratio >= 0.5 ? "MET" : "NOT MET"}`)
  log(`  CPU per request, bare/service: ${round(load.cpuRatio, 3)}`)
  log(`  PGlite / PostgreSQL service: ${round(load.pgliteRatio, 3)} (target >= 0.5) -> ${load.pgliteRatio >= 0.5 ? "MET" : "NOT MET"}`)
  return load
}

/** --profile: the service on `databaseUrl` under `node --cpu-prof`, the same load; the profile kept in `dir`. */
export const profileLoad = async (opts, { databaseUrl, dataDir, apiKey, dir }) => {
  mkdirSync(dir, { recursive: true })
  log(`\nprofile: service under node --cpu-prof, same load (${opts.warmup} s + ${opts.duration} s)`)
  const profiled = await startService({ databaseUrl, dataDir, nodeArgs: ["--cpu-prof", "--cpu-prof-dir", dir] })
  pinProcess(profiled.child.pid, 0)
  const r = await measure(opts, { ...profiled, apiKey }, "service under the profiler")
  printRun("service", r)
  await profiled.stop()
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
  if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`)
  const summary = summarise(JSON.parse(readFileSync(join(dir, file), "utf8")), { top: 30, ...r.window })
  log(`profile: ${join(dir, file)} (summary of the measured ${opts.duration} s only)`)
  printSummary(summary, log)
  return { file: join(dir, file), run: r, summary }
}
