/**
 * The service's figures as bench/catalogue prints them: its memory (after a forced full GC, or as
 * it is now) and durations in seconds.
 */
import { gcAndMeasure, log, memoryOf, mib, round } from "./lib.mjs"
import { scrape } from "./service.mjs"

/** After a forced full GC: resident size (/proc), V8 heap and external memory (in the process). */
export const memorySnapshot = (service) => gcAndMeasure(service)

/** Resident size (/proc) and the V8 heap / external memory (/metrics) of the service now, no GC. */
export const memoryNow = async (service) => {
  const m = await scrape(service)
  const { rss, hwm } = memoryOf(service.pid)
  return {
    rss,
    hwm,
    heapUsed: m.get("nodejs_heap_size_used_bytes"),
    heapTotal: m.get("nodejs_heap_size_total_bytes"),
    external: m.get("nodejs_external_memory_bytes"),
    oldSpaceUsed: m.get("nodejs_heap_space_size_used_bytes{space=\"old\"}"),
    largeObjectSpaceUsed: m.get("nodejs_heap_space_size_used_bytes{space=\"large_object\"}")
  }
}

export const printMemory = (label, m) =>
  log(
    `  ${label}${m.gcMs !== undefined ? ` (after a forced full GC, ${round(m.gcMs)} ms)` : ""}: RSS ${mib(m.rss)} MiB (peak so far ${mib(m.hwm)} MiB);` +
      ` V8 heap used ${mib(m.heapUsed)} MiB of ${mib(m.heapTotal)} MiB` +
      (m.spaces ? ` (old ${mib(m.spaces.old_space)}, large objects ${mib(m.spaces.large_object_space)}, new ${mib(m.spaces.new_space)})` : "") +
      `, external ${mib(m.external)} MiB (array buffers ${mib(m.arrayBuffers)} MiB)`
  )

/** Milliseconds printed as seconds. */
export const fmtS = (ms) => `${round(ms / 1000, 1)} s`
