/**
 * One bench/stream scenario, N clients at a rate of changes: a fresh database, the feed set up
 * (feed.mjs), the service's idle and loaded phases (service-phase.mjs), the bare's replay
 * (bare-phase.mjs), and the ratios and targets; everything it opened is closed and the database
 * dropped at the end, whatever happened.
 */
import { join } from "node:path"
import { createDatabase, log, sleep, waitQuiet } from "../lib/harness.mjs"
import { measureBares } from "./bare-phase.mjs"
import { startFeed } from "./feed.mjs"
import { measureIdle, measureService, stopService } from "./service-phase.mjs"

export const runScenario = async (opts, { clients: N, rate }, dir) => {
  log(`\n=== ${N} clients at ${rate} changes/s (source: ${opts.source}) ===`)
  const result = { clients: N, rate, source: opts.source }
  /** The scenario's state: its database and what is open on it (service, clients, writer, connections). */
  const s = { db: await createDatabase(`mps_bench_stream`), notified: [] }
  try {
    await waitQuiet(`the ${N}x${rate} scenario`, { maxSeconds: opts.waitQuiet, quietBusy: opts.quietBusy })
    const { auth, cursor, epoch, profileDir } = await startFeed(opts, s, dir, N, rate)
    await measureIdle(opts, s, result)
    const framesFile = join(dir, `frames-${N}x${rate}`)
    const svc = await measureService(opts, s, { N, auth, cursor, epoch, framesFile }, result)
    await stopService(opts, s, { profileDir, window: svc.window }, result)
    await measureBares(opts, s, { N, auth, epoch, framesFile }, result)
    const base = result.bare.buffer ?? Object.values(result.bare)[0]
    if (base) {
      result.baselineCpuUsPerChange = base.serverCpuUsPerChange
      result.cpuRatio = svc.serverCpuUsPerChange / base.serverCpuUsPerChange
      result.feedCpuRatio = svc.feedCpuUsPerChange / base.serverCpuUsPerChange
      result.targets = {
        everyChangeDelivered: svc.complete,
        p99Under250: svc.latency.p99 < 250,
        cpuWithin125: result.cpuRatio <= 1.25
      }
    }
    return result
  } finally {
    if (s.clients) await s.clients.stop()
    if (s.writer) await s.writer.stop()
    if (s.service) await s.service.stop()
    await s.dbClient?.end().catch(() => undefined)
    await s.listener?.end().catch(() => undefined)
    await sleep(300)
    await s.db.drop().catch((e) => log(`could not drop ${s.db.name}: ${e.message}`))
  }
}
