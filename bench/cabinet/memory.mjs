/**
 * The service's memory and counters as bench/cabinet reads them: its resident size (sampled from
 * /proc while a window runs), and from /metrics a counter's value and the heap spaces.
 */
import { readFileSync } from "node:fs"
import { round } from "../lib/harness.mjs"

const rssMb = (pid) => {
  try {
    return Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)[1]) / 1024
  } catch {
    return Number.NaN
  }
}

/** Samples the process's RSS every 250 ms until `stop()`: the samples (MB). */
export const sampleRss = (pid) => {
  const samples = []
  const timer = setInterval(() => samples.push(rssMb(pid)), 250)
  return { samples, stop: () => clearInterval(timer) }
}

/** A counter's value in /metrics (its name with any labels); 0 when absent. */
export const metric = async (service, series) => {
  const text = await fetch(`${service.opsUrl}/metrics`).then((r) => r.text())
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
}

/** The service's heap spaces (new, old) and external memory, MB, from /metrics. */
export const heapOf = async (service) => {
  const mb = async (series) => round((await metric(service, series)) / 2 ** 20)
  return {
    new: await mb(`nodejs_heap_space_size_total_bytes{space="new"}`),
    old: await mb(`nodejs_heap_space_size_total_bytes{space="old"}`),
    external: await mb("nodejs_external_memory_bytes")
  }
}
