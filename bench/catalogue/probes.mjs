/**
 * What bench/catalogue watches while a dump is regenerated: GET /health on the ops port every few
 * ms from here (a stall shows as one long request), /metrics every second (the event-loop delay,
 * GC time, memory), the service's main thread's CPU and run-queue wait; and the worst of them over
 * a window.
 */
import { Agent, request } from "node:http"
import { cpuMs, machineTicks, memoryOf, round, schedstat, sleep } from "./lib.mjs"
import { scrape } from "./service.mjs"

/**
 * From now until stopped: GET /health on the ops port every `everyMs` (one keep-alive connection,
 * never two at once, so a stall shows as one long request), and /metrics every second (event-loop
 * delay max since the previous scrape, GC time, memory).
 */
export const startProbes = (service, everyMs) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const url = new URL(`${service.opsUrl}/health`)
  const probes = []
  const scrapes = []
  let inFlight = false
  let stopped = false
  const now = () => performance.timeOrigin + performance.now()
  let expected = now() + everyMs
  let worstTimerLateness = 0
  const tick = setInterval(() => {
    const t = now()
    worstTimerLateness = Math.max(worstTimerLateness, t - expected)
    expected = t + everyMs
    if (inFlight || stopped) return
    inFlight = true
    const sentAt = now()
    // the service's main thread's CPU time while this probe waited: on a machine shared with other
    // work, how long the event loop was busy (code, GC) as opposed to waiting for a CPU
    const cpuAtSend = schedstat(service.pid)
    const done = (status) => {
      const cpuAtEnd = schedstat(service.pid)
      probes.push({
        sentAt,
        ms: now() - sentAt,
        status,
        cpuMs: cpuAtSend && cpuAtEnd ? cpuAtEnd.cpuMs - cpuAtSend.cpuMs : NaN,
        waitMs: cpuAtSend && cpuAtEnd ? cpuAtEnd.waitMs - cpuAtSend.waitMs : NaN
      })
      inFlight = false
    }
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, agent }, (res) => {
      res.resume()
      res.on("end", () => done(res.statusCode))
    })
    req.on("error", () => done(0))
    req.end()
  }, everyMs)
  const scrapeLoop = (async () => {
    await scrape(service).catch(() => undefined) // resets the delay histogram
    let last = now()
    while (!stopped) {
      await sleep(1000)
      try {
        const m = await scrape(service)
        const at = now()
        scrapes.push({
          sched: schedstat(service.pid),
          ticks: machineTicks(),
          serviceCpuMs: cpuMs(service.pid),
          from: last,
          at,
          eldMaxMs: m.get("nodejs_eventloop_lag_max_seconds") * 1000,
          gcMajorSum: m.get("nodejs_gc_duration_seconds_sum{kind=\"major\"}") ?? 0,
          gcMajorCount: m.get("nodejs_gc_duration_seconds_count{kind=\"major\"}") ?? 0,
          gcMinorSum: m.get("nodejs_gc_duration_seconds_sum{kind=\"minor\"}") ?? 0,
          gcIncrementalSum: m.get("nodejs_gc_duration_seconds_sum{kind=\"incremental\"}") ?? 0,
          gcBuckets: gcBuckets(m),
          rss: memoryOf(service.pid).rss,
          heapUsed: m.get("nodejs_heap_size_used_bytes"),
          external: m.get("nodejs_external_memory_bytes")
        })
        last = at
      } catch { /* the service is going away */ }
    }
  })()
  return {
    probes,
    scrapes,
    startedAt: now(),
    stop: async () => {
      stopped = true
      clearInterval(tick)
      await scrapeLoop
      agent.destroy()
      return { worstTimerLateness }
    }
  }
}

/** nodejs_gc_duration_seconds bucket counts: { kind: [[le, count], ...] } */
const gcBuckets = (m) => {
  const out = {}
  for (const [key, value] of m) {
    if (!key.startsWith("nodejs_gc_duration_seconds_bucket{")) continue
    const le = key.match(/le="([^"]+)"/)?.[1]
    const kind = key.match(/kind="([^"]+)"/)?.[1]
    if (le === undefined || kind === undefined) continue
    ;(out[kind] ??= []).push([le === "+Inf" ? Infinity : Number(le), value])
  }
  for (const k of Object.keys(out)) out[k].sort((a, b) => a[0] - b[0])
  return out
}

/** From two bucket snapshots: per kind, the bucket "(lo, hi] s" of the longest GC pause between them. */
const longestGc = (a, b) => {
  const out = {}
  for (const kind of Object.keys(b ?? {})) {
    const before = new Map((a?.[kind] ?? []).map(([le, n]) => [le, n]))
    let prevLe = 0
    let longest
    let prevDiff = 0
    for (const [le, n] of b[kind]) {
      const diff = n - (before.get(le) ?? 0) // cumulative
      if (diff > prevDiff) longest = `${prevLe}-${le} s`
      prevDiff = diff
      prevLe = le
    }
    if (longest) out[kind] = longest
  }
  return out
}

/** The worst probe and event-loop delay over [startAt, endAt] (epoch ms). */
export const delaysOver = (probes, scrapes, startAt, endAt) => {
  const inWindow = probes.filter((p) => p.sentAt + p.ms >= startAt && p.sentAt <= endAt)
  const worstProbe = inWindow.reduce((w, p) => (p.ms > w ? p.ms : w), 0)
  const worst = inWindow.find((p) => p.ms === worstProbe)
  // the probe during which the main thread ran longest: the longest the loop was busy
  const busiest = inWindow.reduce((w, p) => (w === undefined || p.cpuMs > w.cpuMs ? p : w), undefined)
  const overlapping = scrapes.filter((s) => s.at >= startAt && s.from <= endAt)
  const eldMax = overlapping.reduce((w, s) => Math.max(w, s.eldMaxMs), 0)
  const i0 = scrapes.findIndex((s) => s.at >= startAt)
  const before = i0 > 0 ? scrapes[i0 - 1] : undefined
  const after = overlapping[overlapping.length - 1]
  const gc = before && after
    ? {
      majorMs: (after.gcMajorSum - before.gcMajorSum) * 1000,
      majorCount: after.gcMajorCount - before.gcMajorCount,
      minorMs: (after.gcMinorSum - before.gcMinorSum) * 1000,
      incrementalMs: (after.gcIncrementalSum - before.gcIncrementalSum) * 1000,
      longestPause: longestGc(before.gcBuckets, after.gcBuckets)
    }
    : undefined
  // the main thread's CPU and run-queue wait (/proc/<pid>/task/<pid>/schedstat), the machine's other load
  let sched
  if (before && after && before.sched && after.sched) {
    const wall = after.at - before.at
    const cores = (after.ticks.total - before.ticks.total) / (wall / 1000 * 100)
    const busyCores = (after.ticks.busy - before.ticks.busy) / (wall / 1000 * 100)
    sched = {
      wallMs: wall,
      mainThreadCpuMs: after.sched.cpuMs - before.sched.cpuMs,
      mainThreadRunQueueWaitMs: after.sched.waitMs - before.sched.waitMs,
      serviceCores: (after.serviceCpuMs - before.serviceCpuMs) / wall,
      machineBusyCores: busyCores,
      cores: round(cores, 1)
    }
  }
  const p = inWindow.map((x) => x.ms).sort((a, b) => a - b)
  return {
    probes: inWindow.length,
    worstProbeMs: worstProbe,
    worstProbe: worst && { atMs: worst.sentAt - startAt, ms: worst.ms, mainThreadCpuMs: worst.cpuMs, mainThreadWaitMs: worst.waitMs },
    busiestProbe: busiest && { atMs: busiest.sentAt - startAt, ms: busiest.ms, mainThreadCpuMs: busiest.cpuMs, mainThreadWaitMs: busiest.waitMs },
    p99ProbeMs: p.length ? p[Math.min(p.length - 1, Math.floor(p.length * 0.99))] : undefined,
    eventLoopDelayMaxMs: eldMax,
    gc,
    sched
  }
}
