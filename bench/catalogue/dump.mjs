/**
 * bench/catalogue's dump regeneration: a follower start (this script holds the sync leader's lock)
 * with DUMP_INTERVAL_SECONDS = --dump-interval, the regenerations after the first measured with
 * the probes (probes.mjs) running, optionally one more after price changes in the change log;
 * between the regenerations the same probes for comparison; the memory at the end.
 */
import { holdLeaderLock, writePriceChanges } from "./database.mjs"
import { fmtS, memoryNow, memorySnapshot, printMemory } from "./figures.mjs"
import { log, memoryOf, mib, round, sleep } from "./lib.mjs"
import { delaysOver, startProbes } from "./probes.mjs"
import { dumpOf, messageOf, startService } from "./service.mjs"

export const dumpBench = async (bench, db, tmp, size) => {
  const { opts } = bench
  const lock = await holdLeaderLock(db.url)
  let service
  try {
    const interval = opts.dumpInterval
    service = await startService(bench, { db, tmp, size, dumpInterval: interval, label: `service-${size}-dump` })
    log(
      `  start (follower; dump every ${interval} s${service.nodeOptions ? `; NODE_OPTIONS=${service.nodeOptions}` : ""}): ` +
        `loaded ${service.start.loadedItems} items ${fmtS(service.start.loadMs)} after spawn; ready after ${fmtS(service.start.readyMs)}`
    )
    const first = service.start.firstDump
    log(`  first dump (right after the load): ${fmtS(first.millis)}, gzip ${mib(first.gzipBytes)} MiB, JSON ${mib(first.jsonBytes)} MiB`)
    // The memory is measured after the probed regenerations: its forced full GC (through the
    // inspector) stalls the process for seconds at millions of items, and the build after it
    // started with a 250-500 ms stall of its own (seen at 2.5M: only the first build probed after it).
    const probes = startProbes(service, opts.probeMs)
    const firstIndex = service.events.findIndex((e) => messageOf(e) === "catalogue dump built")
    const regens = []
    let from = firstIndex + 1
    for (let i = 0; i < opts.dumpRegens; i++) {
      const { event, index } = await service.waitLog("catalogue dump built", { from, timeoutMs: (interval + 600) * 1000 })
      from = index + 1
      regens.push(dumpOf(event))
      await sleep(1500) // the scrape after the end
    }
    if (opts.dumpChanges > 0) {
      // as another node's sync leader would: each change in the items table and the log, one
      // transaction; the service (a follower) tails them, and its next build finds most pieces changed
      const t0 = performance.now()
      const changedIds = await writePriceChanges(db.url, { n: opts.dumpChanges, delta: 1 })
      log(`  ${opts.dumpChanges} price changes written to the change log in ${fmtS(performance.now() - t0)}`)
      const { event, index } = await service.waitLog("catalogue dump built", { from, timeoutMs: (interval + 600) * 1000 })
      from = index + 1
      const changed = { ...dumpOf(event), afterChanges: opts.dumpChanges }
      if (changed.piecesReused > changed.pieces / 10) {
        // the build had started before the changes were applied: the one after it is the measure
        const next = await service.waitLog("catalogue dump built", { from, timeoutMs: (interval + 600) * 1000 })
        Object.assign(changed, dumpOf(next.event))
      }
      regens.push(changed)
      await sleep(1500)
      // back to the seeded prices (a later run with --db checks the rows against the seed)
      await writePriceChanges(db.url, { ids: changedIds, delta: -1 })
    }
    const idleStart = Math.max(first.endAt, probes.startedAt) + 2000
    const { worstTimerLateness } = await probes.stop()
    const memoryAfter = await memoryNow(service)
    // the steady state: index loaded, one dump held
    const memorySteady = await memorySnapshot(service)
    printMemory("memory after load and the regenerations", memorySteady)
    for (const r of regens) Object.assign(r, delaysOver(probes.probes, probes.scrapes, r.startAt, r.endAt))
    // between builds: the same probes while nothing is regenerated
    const idle = []
    let idleFrom = idleStart
    for (const r of regens) {
      if (r.startAt - 1000 > idleFrom) idle.push(delaysOver(probes.probes, probes.scrapes, idleFrom, r.startAt - 1000))
      idleFrom = r.endAt + 2000
    }
    regens.forEach((r, i) =>
      log(
        `  regeneration ${i + 1}${r.afterChanges ? ` (after ${r.afterChanges} changes: ${r.pieces - r.piecesReused} of ${r.pieces} pieces rebuilt)` : ""}: ${
          fmtS(r.millis)
        }, gzip ${mib(r.gzipBytes)} MiB (JSON ${mib(r.jsonBytes)} MiB), ` +
          `/health worst ${round(r.worstProbeMs, 1)} ms (p99 ${round(r.p99ProbeMs, 1)} ms, ${r.probes} probes` +
          (r.worstProbe
            ? `; the worst at +${fmtS(r.worstProbe.atMs)}, main thread ${round(r.worstProbe.mainThreadCpuMs)} ms CPU + ${
              round(r.worstProbe.mainThreadWaitMs)
            } ms waiting for a CPU meanwhile`
            : "") +
          (r.busiestProbe
            ? `; longest main-thread CPU during one probe ${round(r.busiestProbe.mainThreadCpuMs)} ms (at +${fmtS(r.busiestProbe.atMs)}, probe ${
              round(r.busiestProbe.ms)
            } ms)`
            : "") +
          `), ` +
          `event-loop delay max ${round(r.eventLoopDelayMaxMs, 1)} ms` +
          (r.gc ?
            `, GC major ${round(r.gc.majorMs)} ms in ${r.gc.majorCount}, minor ${round(r.gc.minorMs)} ms, incremental ${round(r.gc.incrementalMs)} ms` +
            ` (longest pause by kind: ${JSON.stringify(r.gc.longestPause)})` :
            "") +
          (r.sched ?
            `; over ${fmtS(r.sched.wallMs)}: main thread ${fmtS(r.sched.mainThreadCpuMs)} CPU, ${fmtS(r.sched.mainThreadRunQueueWaitMs)} waiting for a CPU;` +
            ` service ${round(r.sched.serviceCores, 2)} cores, machine ${round(r.sched.machineBusyCores, 2)} of ${r.sched.cores} cores busy` :
            "")
      )
    )
    const idleWorst = Math.max(0, ...idle.map((x) => x.worstProbeMs))
    const idleBusiest = Math.max(0, ...idle.map((x) => x.busiestProbe?.mainThreadCpuMs ?? 0))
    const idleEld = Math.max(0, ...idle.map((x) => x.eventLoopDelayMaxMs))
    log(
      `  between regenerations: /health worst ${round(idleWorst, 1)} ms (longest main-thread CPU during one probe ${
        round(idleBusiest)
      } ms), event-loop delay max ${round(idleEld, 1)} ms;` +
        ` this process's own 10 ms timer was at worst ${round(worstTimerLateness, 1)} ms late`
    )
    log(`  RSS over the run: max ${mib(Math.max(...probes.scrapes.map((s) => s.rss)))} MiB; peak (VmHWM) ${mib(memoryOf(service.pid).hwm)} MiB`)
    return {
      start: service.start,
      nodeOptions: service.nodeOptions,
      interval,
      regenerations: regens,
      idle: { worstProbeMs: idleWorst, busiestProbeCpuMs: idleBusiest, eventLoopDelayMaxMs: idleEld },
      probeTimerWorstLatenessMs: worstTimerLateness,
      memorySteady,
      memoryAfter,
      rssTimeline: probes.scrapes.map((s) => ({ at: s.at, rss: s.rss, heapUsed: s.heapUsed, external: s.external }))
    }
  } finally {
    if (service) await service.stop()
    await lock.release()
  }
}
