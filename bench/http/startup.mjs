/**
 * bench/http's start-up: the time from spawn until the API port accepts and the ops /health
 * answers, median of --starts, on the migrated PostgreSQL database and on an already-initialised
 * PGlite DATA_DIR, for what `npm start` runs and for the tsc output; with --profile-startup, one
 * start of each under `node --cpu-prof`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs"
import { createConnection } from "node:net"
import { join } from "node:path"
import { cpuMs, freePort, httpOk, log, MAIN, median, ROOT, round, serviceEnv, sleep, START, startChild, startService, waitQuiet } from "../lib/harness.mjs"
import { printSummary, summarise } from "./cpuprofile-summary.mjs"

/** The compiled modules (tsc), one file per source file. */
const TSC_MAIN = join(ROOT, "dist/src/main.js")
export const rel = (file) => file.slice(ROOT.length)

const portAccepts = (port) =>
  new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => {
      socket.destroy()
      resolve(false)
    })
  })

/** Spawn to "API port accepts and ops /health answers 200", in ms; the process is stopped after. */
const timeStart = async ({ databaseUrl, dataDir, nodeArgs = [], entry = MAIN }) => {
  const port = await freePort()
  const opsPort = await freePort()
  const env = serviceEnv({ port, opsPort, databaseUrl, dataDir })
  const t0 = performance.now()
  const proc = startChild([...START.nodeFlags, ...nodeArgs, entry], env, "service")
  let apiAt, healthAt, cpuAtReady, readyAt
  try {
    const deadline = Date.now() + 60_000
    while (apiAt === undefined || healthAt === undefined) {
      if (proc.child.exitCode !== null) throw new Error(`service exited with ${proc.child.exitCode}:\n${proc.output()}`)
      if (Date.now() > deadline) throw new Error(`service did not start in 60 s:\n${proc.output()}`)
      const [api, health] = await Promise.all([
        apiAt === undefined ? portAccepts(port) : true,
        healthAt === undefined ? httpOk(`http://127.0.0.1:${opsPort}/health`) : true
      ])
      const now = performance.now()
      if (api && apiAt === undefined) apiAt = now - t0
      if (health && healthAt === undefined) healthAt = now - t0
      if (apiAt === undefined || healthAt === undefined) await sleep(5)
    }
    cpuAtReady = cpuMs(proc.child.pid)
    readyAt = Number(process.hrtime.bigint() / 1000n)
  } finally {
    const code = await proc.stop()
    if (code !== 0 && code !== "SIGTERM") log(`  (service exited with ${code})`)
  }
  return { ms: Math.max(apiAt, healthAt), apiMs: apiAt, healthMs: healthAt, cpuMs: cpuAtReady, readyAt }
}

const measureStartups = async (opts, label, settings) => {
  const runs = []
  for (let i = 0; i < opts.starts; i++) {
    const busyBefore = await waitQuiet(`${label} start ${i + 1}`, { maxSeconds: opts.waitQuiet, quietBusy: opts.quietBusy })
    const r = { ...(await timeStart(settings)), machineBusyBefore: busyBefore }
    runs.push(r)
    log(`  ${label} start ${i + 1}: ${round(r.ms)} ms (API port ${round(r.apiMs)} ms, /health ${round(r.healthMs)} ms; ${round(r.cpuMs)} ms CPU)`)
    await sleep(300)
  }
  return { medianMs: median(runs.map((r) => r.ms)), medianCpuMs: median(runs.map((r) => r.cpuMs)), runs }
}

/** An initialised PGlite DATA_DIR: a first start, not measured, creates it. */
const initialisePglite = async (dataDir) => {
  const init = await startService({ databaseUrl: undefined, dataDir })
  await init.stop()
}

/** --profile-startup: one start on PostgreSQL and one on PGlite under the profiler, up to /health; each profile kept under `out`. */
export const profileStartups = async ({ db, tmp, out, stamp }) => {
  const liteDir = join(tmp, "data-pglite-profile")
  await initialisePglite(liteDir)
  const profiles = {}
  for (const [label, databaseUrl, dataDir] of [["PostgreSQL", db.url, join(tmp, "data-pg")], ["PGlite", undefined, liteDir]]) {
    const dir = join(out, `startup-profile-${label}-${stamp}`)
    mkdirSync(dir, { recursive: true })
    log(`\nstart-up profile (${label}): node --cpu-prof ${rel(MAIN)}, until /health answers`)
    const r = await timeStart({ databaseUrl, dataDir, nodeArgs: ["--cpu-prof", "--cpu-prof-dir", dir] })
    log(`  ${round(r.ms)} ms (${round(r.cpuMs)} ms CPU) under the profiler`)
    const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
    const summary = summarise(JSON.parse(readFileSync(join(dir, file), "utf8")), { top: 25, to: r.readyAt })
    log(`profile: ${join(dir, file)} (up to /health answering)`)
    printSummary(summary, log)
    profiles[label] = { file: join(dir, file), run: r, summary }
  }
  return profiles
}

/** The start-up times of what `npm start` runs, and of the compiled modules (tsc) if that is something else. */
export const measureStartupTimes = async (opts, { db, tmp }) => {
  const startup = {}
  const entries = [...new Set([MAIN, TSC_MAIN])].filter((f) => existsSync(f))
  const liteDir = join(tmp, "data-pglite")
  log(`\n  PGlite: initialising ${liteDir} (first start, not measured)`)
  await initialisePglite(liteDir)
  for (const entry of entries) {
    log(`\nstart-up of node ${rel(entry)}${entry === MAIN ? " (npm start)" : ""}: spawn -> API port accepts and /health answers; median of ${opts.starts}`)
    const pgStart = await measureStartups(opts, "PostgreSQL", { databaseUrl: db.url, dataDir: join(tmp, "data-pg"), entry })
    log(`  PostgreSQL median: ${round(pgStart.medianMs)} ms (target < 1500 ms); CPU ${round(pgStart.medianCpuMs)} ms`)
    const liteStart = await measureStartups(opts, "PGlite", { databaseUrl: undefined, dataDir: liteDir, entry })
    log(`  PGlite median: ${round(liteStart.medianMs)} ms (target < 1500 ms); CPU ${round(liteStart.medianCpuMs)} ms`)
    startup[rel(entry)] = { npmStart: entry === MAIN, postgresql: pgStart, pglite: liteStart }
  }
  return startup
}
