/**
 * bench/catalogue --profile: one more follower start under `node --cpu-prof`, where the load at
 * start, the first dump, each HTTP load and a dump regeneration spend CPU
 * (bench/http/cpuprofile-summary.mjs over each one's window); the profile is kept in out/.
 */
import { mkdirSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { printSummary, summarise } from "../http/cpuprofile-summary.mjs"
import { holdLeaderLock } from "./database.mjs"
import { ENDPOINTS, measure, printRun } from "./http.mjs"
import { log, round } from "./lib.mjs"
import { dumpOf, messageOf, startService } from "./service.mjs"

export const profileRun = async (bench, db, tmp, size, apiKey, started) => {
  const { opts } = bench
  const dir = join(bench.out, `profile-${started.toISOString().replace(/[:.]/g, "-")}`)
  mkdirSync(dir, { recursive: true })
  const lock = await holdLeaderLock(db.url)
  const windowsUs = {}
  const toHrUs = (epochMs) => Number(process.hrtime.bigint() / 1000n) - (Date.now() - epochMs) * 1000
  let service
  const interval = 2 * (opts.warmup + opts.duration + 1) + 15
  try {
    service = await startService(bench, {
      db,
      tmp,
      size,
      dumpInterval: interval,
      inspect: false,
      nodeArgs: ["--cpu-prof", "--cpu-prof-dir", dir],
      label: "service-profiled"
    })
    const loaded = service.events.find((e) => messageOf(e) === "catalogue loaded")
    windowsUs.load = { from: Number(service.spawnedHr / 1000n), to: toHrUs(loaded.at) }
    const first = service.start.firstDump
    windowsUs.firstDump = { from: toHrUs(first.startAt), to: toHrUs(first.endAt) }
    const runs = {}
    for (const e of ENDPOINTS) {
      const r = await measure(bench, service, e, apiKey, [service.pid], { quiet: false })
      printRun(bench, `${e.key}`, r)
      if (r.non2xx > 0) log(`    ${r.non2xx} answers other than 2xx or 3xx`)
      runs[e.key] = r
      windowsUs[e.key] = r.window
    }
    const firstIndex = service.events.findIndex((e) => messageOf(e) === "catalogue dump built")
    const { event } = await service.waitLog("catalogue dump built", { from: firstIndex + 1, timeoutMs: (interval + 600) * 1000 })
    const regen = dumpOf(event)
    windowsUs.regeneration = { from: toHrUs(regen.startAt), to: toHrUs(regen.endAt) }
    await service.stop()
    service = undefined
    const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
    if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`)
    const profile = JSON.parse(readFileSync(join(dir, file), "utf8"))
    const summaries = {}
    for (const [name, w] of Object.entries(windowsUs)) {
      log(`\n  profile window: ${name} (${round((w.to - w.from) / 1000)} ms)`)
      summaries[name] = summarise(profile, { top: 25, ...w })
      printSummary(summaries[name], (...a) => log("   ", ...a))
    }
    return { file: join(dir, file), runs, regeneration: regen, summaries }
  } finally {
    if (service) await service.stop()
    await lock.release()
  }
}
