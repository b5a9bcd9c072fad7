/**
 * bench/stream's service phases of a scenario: idle (--idle seconds with no feed client: the
 * service's CPU for the changes alone), then the service under N clients: connected (the external
 * writer paused meanwhile), a warm-up, the measured window with latencies from each change's
 * transaction start and from its commit; then the clients, the writer and the service stopped,
 * and with --profile the window's CPU profile.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { printSummary, summarise } from "../http/cpuprofile-summary.mjs"
import { childPids, log, otherBusyProcesses, round, sleep } from "../lib/harness.mjs"
import { STREAM_PATH } from "./feed.mjs"
import { printPhase } from "./report.mjs"
import { delta, headSeq, measureWindow, snapshot, startClients } from "./window.mjs"

/** The churn alone, with no client: into `result.idle`. */
export const measureIdle = async (opts, s, result) => {
  await sleep(3000)
  const h0 = await headSeq(s.dbClient)
  const i0 = await snapshot({ server: s.service.child.pid }, s.db.name)
  await sleep(opts.idle * 1000)
  const i1 = await snapshot({ server: s.service.child.pid }, s.db.name)
  const h1 = await headSeq(s.dbClient)
  const idle = delta(i0, i1)
  result.idle = {
    seconds: idle.seconds,
    loggedPerSecond: (h1 - h0) / idle.seconds,
    serverCores: idle.cores.server,
    serverCpuMsPerSecond: idle.cpuMs.server / idle.seconds,
    serverCpuUsPerLoggedChange: (idle.cpuMs.server * 1000) / (h1 - h0),
    cores: idle.cores
  }
  log(
    `  idle (no clients): ${round(result.idle.loggedPerSecond, 1)} logged changes/s; service ${idle.cores.server} cores` +
      ` (${round(result.idle.serverCpuUsPerLoggedChange, 1)} µs per logged change), postgres ${idle.cores.postgres}, machine ${idle.cores.machine}`
  )
}

/**
 * Each change's origins from `seq0` on: its transaction's start (catalogue_changes.created_at) and
 * its commit (the arrival of the writing transaction's pg_notify, payload its last seq).
 */
const changeOrigins = async (s, headStart, headEnd) => {
  const seq0 = Math.max(0, headStart - 50_000)
  const rows = (await s.dbClient.query(
    `SELECT seq, extract(epoch from created_at) * 1000 AS t FROM catalogue_changes WHERE seq > $1 AND seq <= $2 ORDER BY seq`,
    [seq0, headEnd + 50_000]
  )).rows
  const times = []
  for (const r of rows) times[Number(r.seq) - seq0] = Number(r.t)
  // commit: the arrival of the writing transaction's pg_notify (payload: its last seq) at our listener
  const committed = []
  const notes = [...s.notified].sort((a, b) => a[0] - b[0])
  let k = 0
  for (let seq = seq0 + 1; seq <= headEnd + 50_000 && k < notes.length; seq++) {
    while (k < notes.length && notes[k][0] < seq) k++
    if (k < notes.length) committed[seq - seq0] = notes[k][1]
  }
  return [
    { name: "fromTransactionStart", seq0, times },
    { name: "fromCommit", seq0, times: committed }
  ]
}

/**
 * The service under N clients (an external writer pauses while they connect: each client then
 * joins at the head, and the ramp is not slowed down by the feed to the clients already there):
 * into `result.service`; the window's frames saved to `framesFile` for the bare's replay.
 */
export const measureService = async (opts, s, { N, auth, cursor, epoch, framesFile }, result) => {
  const { dbClient, writer } = s
  if (writer) await writer.call({ cmd: "pause" })
  const clients = s.clients = await startClients("clients")
  const connected = await clients.call({
    cmd: "connect",
    url: `ws://127.0.0.1:${s.service.port}${STREAM_PATH}`,
    headers: auth,
    n: N,
    cursor,
    epoch,
    catchUpTo: await headSeq(dbClient),
    parallel: opts.parallel
  })
  log(`  connected ${connected.connected}/${N} in ${round(connected.ms)} ms (failed ${connected.failed} ${connected.firstErrors.join("; ")})`)
  if (connected.connected < N) throw new Error("not every client connected")
  const caught = await clients.call({ cmd: "waitPosition", target: await headSeq(dbClient), timeoutMs: 60_000 })
  if (!caught.ok) log(`  WARNING: ${caught.behind} clients did not catch up before the warm-up`)
  if (writer) await writer.call({ cmd: "start" })
  await sleep(opts.warmup * 1000)
  let headStart
  const svc = await measureWindow({
    clients,
    serverPid: s.service.child.pid,
    database: s.db.name,
    // the bare replays the frames of the window: the writer's (the offered load) or client 0's
    record: ({ w0, w1 }) =>
      writer
        ? writer.call({ cmd: "saveFrames", file: framesFile, fromMs: w0.at, toMs: w1.at })
        : clients.call({ cmd: "saveFrames", file: framesFile }),
    during: async () => {
      headStart = await headSeq(dbClient)
      await sleep(opts.duration * 1000)
      const headEnd = await headSeq(dbClient)
      return { logged: headEnd - headStart, headEnd }
    },
    headAtEnd: async (d) => d.headEnd,
    origins: (d) => changeOrigins(s, headStart, d.headEnd)
  })
  svc.feedCpuUsPerChange = ((svc.serverCpuMs - result.idle.serverCpuMsPerSecond * svc.seconds) * 1000) / svc.delivered
  result.service = svc
  printPhase("service", svc)
  const others = await otherBusyProcesses(1000, new Set([...childPids(), process.pid]))
  if (others.length > 0) log(`  other busy processes just after: ${others.slice(0, 4).map((o) => `${o.cores} ${o.cmd}`).join(" | ")}`)
  result.othersAfterService = others.slice(0, 6)
  return svc
}

/** The clients, the writer and the service stopped; with --profile, the window's profile into `result.profile`. */
export const stopService = async (opts, s, { profileDir, window }, result) => {
  await s.clients.call({ cmd: "close" })
  await s.clients.stop()
  s.clients = undefined
  if (s.writer) {
    const w = await s.writer.call({ cmd: "stop" })
    const slow = w.batches.filter((b) => b[3] - b[2] > 50).length
    log(`  external writer: ${w.written} changes in ${w.batches.length} transactions; ${slow} took over 50 ms`)
    await s.writer.stop()
    s.writer = undefined
  }
  await s.service.stop(opts.profile ? 120_000 : 15_000)
  s.service = undefined
  if (opts.profile) {
    const file = readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
    if (file !== undefined) {
      const summary = summarise(JSON.parse(readFileSync(join(profileDir, file), "utf8")), { top: 25, ...window })
      log(`  profile: ${join(profileDir, file)} (the measured window only)`)
      printSummary(summary, (...a) => log("   ", ...a))
      result.profile = { file: join(profileDir, file), summary }
    }
  }
}
