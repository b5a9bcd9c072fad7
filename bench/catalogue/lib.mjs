/**
 * Helpers of bench/catalogue (the patterns of bench/http/run.mjs): child processes with their
 * output kept, free ports, machine load, /proc readings, the service's JSON log lines.
 */
import { execSync, spawn } from "node:child_process"
import { cpSync, createWriteStream, readFileSync } from "node:fs"
import { cpus, freemem, totalmem } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
import { buildIfNeeded, cpuMs, freePort, httpOk, log, machineBusyOver, machineTicks, mean, sleep } from "../lib/harness.mjs"

// the helpers shared by every benchmark
export { buildIfNeeded, cpuMs, freePort, httpOk, log, machineBusyOver, machineTicks, mean, sleep }

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))
export const HERE = fileURLToPath(new URL("./", import.meta.url))
export const CLK_TCK = 100

export const round = (x, d = 0) => (x === undefined || x === null || Number.isNaN(x) ? x : Math.round(x * 10 ** d) / 10 ** d)
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
export const mib = (bytes) => round(bytes / 2 ** 20)

/** VmRSS and VmHWM (peak) of a process, in bytes. */
export const memoryOf = (pid) => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (name) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN) * 1024
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") }
  } catch {
    return { rss: NaN, hwm: NaN }
  }
}

/**
 * Other work on the machine skews every figure: wait until it is quiet (busy below `quietBusy` %
 * over a second), up to `seconds`, and say so if it never was. `ownPids` are not counted.
 */
export const waitQuiet = async (what, { seconds, quietBusy, ownPids = [] }) => {
  const deadline = Date.now() + seconds * 1000
  const othersBusy = async (ms) => {
    const a = machineTicks()
    const own0 = ownPids.reduce((n, p) => n + (cpuMs(p) || 0), 0)
    await sleep(ms)
    const b = machineTicks()
    const own1 = ownPids.reduce((n, p) => n + (cpuMs(p) || 0), 0)
    const cores = Math.max(1, b.total - a.total) / (ms / 1000 * CLK_TCK)
    return Math.max(0, (b.busy - a.busy) / Math.max(1, b.total - a.total) - (own1 - own0) / ms / cores)
  }
  let busy = await othersBusy(1000)
  let warned = false
  while (busy * 100 >= quietBusy && Date.now() < deadline) {
    if (!warned) log(`  (machine ${round(busy * 100)} % busy before ${what}; waiting up to ${seconds} s for it to be quiet)`)
    warned = true
    busy = await othersBusy(2000)
  }
  if (busy * 100 >= quietBusy) log(`  WARNING: machine still ${round(busy * 100)} % busy (other processes); measuring ${what} anyway`)
  return busy
}

export const machine = async (pgUrl) => {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8")
  let postgres
  try {
    const c = new pg.Client({ connectionString: pgUrl })
    await c.connect()
    postgres = (await c.query("SHOW server_version")).rows[0].server_version
    await c.end()
  } catch { /* reported as unknown */ }
  return {
    nproc: Number(execSync("nproc").toString().trim()),
    cpuModel: cpuinfo.match(/model name\s*:\s*(.*)/)?.[1] ?? cpus()[0]?.model,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    freeMemoryGiB: round(freemem() / 2 ** 30, 1),
    node: process.version,
    postgres
  }
}

// ---- child processes -----------------------------------------------------------------------------

const children = new Set()
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL")
})

/**
 * A child process with its output kept and its stdout split in lines; JSON lines (the service's
 * logs) are parsed and kept with the time they arrived. `stop` ends it with SIGTERM (SIGKILL after
 * `killAfter` ms).
 */
export const startChild = (command, args, { env, cwd = ROOT, label, keepOutput = 200_000, logFile }) => {
  const spawnedAt = Date.now()
  const spawnedHr = process.hrtime.bigint()
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
  children.add(child)
  // the whole output, for post-mortems
  const file = logFile === undefined ? undefined : createWriteStream(logFile)
  if (file) {
    child.stdout.pipe(file, { end: false })
    child.stderr.pipe(file, { end: false })
    child.once("exit", (code, signal) => file.end(`\n[${label} exited: ${code ?? signal}]\n`))
  }
  let output = ""
  let partial = ""
  const events = []
  const waiters = new Set()
  const keep = (c) => {
    output += c
    if (output.length > keepOutput) output = output.slice(-keepOutput)
  }
  child.stdout.on("data", (c) => {
    keep(c)
    const text = partial + c
    const lines = text.split("\n")
    partial = lines.pop()
    const at = Date.now()
    for (const line of lines) {
      if (!line.startsWith("{")) continue
      let event
      try {
        event = JSON.parse(line)
      } catch {
        continue
      }
      event.receivedAt = at
      event.at = Date.parse(event.timestamp) || at
      events.push(event)
      for (const w of waiters) w()
    }
  })
  child.stderr.on("data", keep)
  const exited = new Promise((resolve) =>
    child.once("exit", (code, signal) => {
      children.delete(child)
      for (const w of waiters) w()
      resolve(code ?? signal)
    })
  )
  const stop = async (killAfter = 30_000) => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), killAfter)
    const code = await exited
    clearTimeout(timer)
    return code
  }
  /** The first log event (from `from` on) whose message is `message` and that passes `where`. */
  const waitLog = (message, { timeoutMs = 600_000, from = 0, where = () => true } = {}) =>
    new Promise((resolve, reject) => {
      const messageOf = (e) => (Array.isArray(e.message) ? e.message[0] : e.message)
      const check = () => {
        for (let i = from; i < events.length; i++) {
          if (messageOf(events[i]) === message && where(events[i])) {
            done()
            return resolve({ event: events[i], index: i })
          }
        }
        if (child.exitCode !== null || child.signalCode !== null) {
          done()
          reject(new Error(`${label} exited (${child.exitCode ?? child.signalCode}) before logging "${message}":\n${output.slice(-4000)}`))
        }
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`${label}: no "${message}" log within ${timeoutMs / 1000} s:\n${output.slice(-4000)}`))
      }, timeoutMs)
      const done = () => {
        clearTimeout(timer)
        waiters.delete(check)
      }
      waiters.add(check)
      check()
    })
  return { child, pid: child.pid, label, spawnedAt, spawnedHr, output: () => output, events, exited, stop, waitLog }
}

// ---- build ---------------------------------------------------------------------------------------

/**
 * A copy of the build (dist/src) and of migrations/ under `dir`, so that a rebuild of dist/ by
 * anyone else during the run (tests rebuild it) does not change what is measured; with the
 * commit it was built from. From dir/dist/src/Db, "../../../migrations" is dir/migrations, and
 * node_modules resolve from the repository's.
 */
export const snapshotBuild = (dir) => {
  cpSync(join(ROOT, "dist/src"), join(dir, "dist/src"), { recursive: true })
  cpSync(join(ROOT, "migrations"), join(dir, "migrations"), { recursive: true })
  const git = (args) => {
    try {
      return execSync(`git ${args}`, { cwd: ROOT }).toString().trim()
    } catch {
      return undefined
    }
  }
  return {
    dir,
    main: join(dir, "dist/src/main.js"),
    distSrc: join(dir, "dist/src"),
    commit: git("rev-parse --short HEAD"),
    subject: git("log -1 --format=%s"),
    dirty: (git("status --porcelain -- src migrations") ?? "") !== ""
  }
}

// ---- /metrics ------------------------------------------------------------------------------------

/** The samples of a Prometheus text exposition, by "name{labels}" (labels as written). */
export const parseMetrics = (text) => {
  const out = new Map()
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const i = line.lastIndexOf(" ")
    out.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return out
}

// ---- the inspector (forced GC, exact memory) -----------------------------------------------------

/**
 * The child must run with --inspect=127.0.0.1:0. Forces a full garbage collection through the
 * inspector (HeapProfiler.collectGarbage, twice) and reads process.memoryUsage() and the V8 heap
 * spaces in the child, then disconnects.
 */
export const gcAndMeasure = async (proc) => {
  const { default: WebSocket } = await import("ws")
  const url = proc.output().match(/Debugger listening on (ws:\/\/\S+)/)?.[1]
  if (url === undefined) throw new Error(`${proc.label}: no inspector URL in its output`)
  const ws = new WebSocket(url)
  await new Promise((resolve, reject) => {
    ws.once("open", resolve)
    ws.once("error", reject)
  })
  let id = 0
  const pending = new Map()
  ws.on("close", () => {
    for (const [, resolve] of pending) resolve({ error: { message: "the inspector connection closed" } })
    pending.clear()
  })
  ws.on("message", (data) => {
    const msg = JSON.parse(data.toString())
    if (msg.id !== undefined && pending.has(msg.id)) {
      pending.get(msg.id)(msg)
      pending.delete(msg.id)
    }
  })
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const n = ++id
      pending.set(n, (msg) => (msg.error ? reject(new Error(`${method}: ${msg.error.message}`)) : resolve(msg.result)))
      ws.send(JSON.stringify({ id: n, method, params }))
    })
  try {
    const t0 = performance.now()
    await send("HeapProfiler.collectGarbage")
    await send("HeapProfiler.collectGarbage")
    const gcMs = performance.now() - t0
    const { result } = await send("Runtime.evaluate", {
      expression: `JSON.stringify({ usage: process.memoryUsage(), spaces: process.getBuiltinModule("v8").getHeapSpaceStatistics()
        .map((s) => ({ name: s.space_name, used: s.space_used_size, size: s.space_size })) })`,
      returnByValue: true
    })
    const { usage, spaces } = JSON.parse(result.value)
    const status = readFileSync(`/proc/${proc.pid}/status`, "utf8")
    const kb = (name) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN) * 1024
    return {
      gcMs,
      rss: kb("VmRSS"),
      hwm: kb("VmHWM"),
      heapUsed: usage.heapUsed,
      heapTotal: usage.heapTotal,
      external: usage.external,
      arrayBuffers: usage.arrayBuffers,
      spaces: Object.fromEntries(spaces.map((s) => [s.name, s.used]))
    }
  } finally {
    ws.close()
  }
}

/** A thread's CPU time and time spent runnable but waiting for a CPU (/proc/<pid>/task/<tid>/schedstat), in ms. */
export const schedstat = (pid, tid = pid) => {
  try {
    const [run, wait, slices] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").trim().split(/\s+/).map(Number)
    return { cpuMs: run / 1e6, waitMs: wait / 1e6, slices }
  } catch {
    return undefined
  }
}
