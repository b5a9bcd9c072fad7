/**
 * Preloaded into the service by buy-tail.mjs (NODE_OPTIONS=--import), into `${LOOP_TRACE}.<pid>`
 * when the process exits, in epoch ms: every gap of over 3 ms between the ticks of a 1 ms timer
 * (the event loop held by something else) as [end, length], and every garbage collection as
 * [start, duration, kind] (node:perf_hooks' gc entries: kind 1 young, 4 full, 8 incremental
 * marking, 16 weak callbacks). Only the service's process.
 */
import fs from "node:fs"
import { PerformanceObserver } from "node:perf_hooks"

if (process.env.LOOP_TRACE && process.argv.some((arg) => arg.endsWith("main.mjs"))) {
  const stalls = []
  const collections = []
  const now = () => performance.timeOrigin + performance.now()
  let last = now()
  setInterval(() => {
    const at = now()
    if (at - last > 3) stalls.push([at, at - last - 1])
    last = at
  }, 1).unref()
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) collections.push([performance.timeOrigin + entry.startTime, entry.duration, entry.detail?.kind ?? entry.kind])
  }).observe({ entryTypes: ["gc"] })
  process.on("exit", () => fs.writeFileSync(`${process.env.LOOP_TRACE}.${process.pid}`, JSON.stringify({ stalls, collections })))
}
