/**
 * CPU time from /proc: a process's, the whole machine's busy share, waiting for the machine to be
 * quiet before a measurement, naming the other processes that were busy, and pinning a process to
 * a core.
 */
import { execSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { log, round, sleep } from "./basics.mjs"

export const CLK_TCK = 100

/** utime + stime of a process, in ms. */
export const cpuMs = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK
  } catch {
    return NaN
  }
}

/** Busy and total jiffies of the whole machine (/proc/stat). */
export const machineTicks = () => {
  const [, ...v] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).map(Number)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = v
  return { busy: user + nice + system + irq + softirq + steal, total: user + nice + system + idle + iowait + irq + softirq + steal }
}

export const machineBusyOver = async (ms) => {
  const a = machineTicks()
  await sleep(ms)
  const b = machineTicks()
  return (b.busy - a.busy) / Math.max(1, b.total - a.total)
}

/** Waits (up to maxSeconds) until the machine is below `quietBusy` % busy; returns the last share seen. */
export const waitQuiet = async (what, { maxSeconds = 60, quietBusy = 15 } = {}) => {
  const deadline = Date.now() + maxSeconds * 1000
  let busy = await machineBusyOver(1000)
  let warned = false
  while (busy * 100 >= quietBusy && Date.now() < deadline) {
    if (!warned) log(`  (machine ${round(busy * 100)} % busy before ${what}; waiting for it to be quiet)`)
    warned = true
    busy = await machineBusyOver(2000)
  }
  if (busy * 100 >= quietBusy) log(`  WARNING: machine still ${round(busy * 100)} % busy; measuring ${what} anyway`)
  return busy
}

/** Processes not started by this benchmark that used CPU over the last `ms` (to name the noise). */
export const otherBusyProcesses = async (ms, exclude) => {
  const snap = () => {
    const m = new Map()
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ").trim().slice(0, 90)
        m.set(entry, { cmd, cpu: cpuMs(Number(entry)) })
      } catch {
        // the process ended while it was read
      }
    }
    return m
  }
  const a = snap()
  await sleep(ms)
  const b = snap()
  const out = []
  for (const [pid, v] of b) {
    if (exclude.has(Number(pid))) continue
    const d = v.cpu - (a.get(pid)?.cpu ?? v.cpu)
    if (d > ms * 0.05) out.push({ pid: Number(pid), cmd: v.cmd, cores: round(d / ms, 2) })
  }
  return out.sort((x, y) => y.cores - x.cores)
}

/** Pins a process and all its threads (worker threads too) to one core. */
export const pinProcess = (pid, core) => execSync(`taskset -a -c -p ${core} ${pid}`, { stdio: "ignore" })
