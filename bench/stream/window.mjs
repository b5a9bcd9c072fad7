/**
 * bench/stream's measured window against whatever server (the service or the bare): the client
 * process (clients.mjs) opened, the window started and ended around `during`, every client waited
 * for at the head, the latencies from the origins given; with the CPU of the server, the clients
 * and the database's backends, and the machine, over the window.
 */
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { CLK_TCK, cpuMs, forkReady, machineTicks, pgBackendCpu, pgCpuDelta, round, rpc } from "../lib/harness.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))

/** CPU, machine and wall clock at one instant, for deltas over a window. */
export const snapshot = async (pids, database) => ({
  pg: database ? await pgBackendCpu(database, "merchant-purchasing-service") : new Map(),
  t: performance.now(),
  ticks: machineTicks(),
  cpu: Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]))
})
export const delta = (a, b) => {
  const seconds = (b.t - a.t) / 1000
  const cores = (ms) => round(ms / 1000 / seconds, 2)
  return {
    seconds,
    cpuMs: Object.fromEntries(Object.keys(a.cpu).map((k) => [k, b.cpu[k] - a.cpu[k]])),
    cores: {
      ...Object.fromEntries(Object.keys(a.cpu).map((k) => [k, cores(b.cpu[k] - a.cpu[k])])),
      postgres: cores(pgCpuDelta(a.pg, b.pg)),
      machine: cores(((b.ticks.busy - a.ticks.busy) * 1000) / CLK_TCK)
    }
  }
}

export const headSeq = async (client) => Number((await client.query("SELECT head_seq FROM catalogue_state")).rows[0].head_seq)

/** The client process (clients.mjs), ready, with its request/reply call. */
export const startClients = async (label) => {
  const { proc, ready } = await forkReady(join(HERE, "clients.mjs"), [], { ...process.env, NODE_ENV: "production" }, label, ["--max-old-space-size=4096"])
  if (!ready.ready) throw new Error("clients did not start")
  return { ...proc, call: rpc(proc) }
}

/** The measured window against whatever server: returns the figures; `origins` gives commit/broadcast times. */
export const measureWindow = async ({ clients, serverPid, database, during, origins, record, headAtEnd }) => {
  const pids = { server: serverPid, clients: clients.child.pid }
  const before = await snapshot(pids, database)
  const hrFrom = Number(process.hrtime.bigint() / 1000n)
  const w0 = await clients.call({ cmd: "window", action: "start", record: record !== undefined })
  const duringResult = await during()
  const w1 = await clients.call({ cmd: "window", action: "end" })
  const after = await snapshot(pids, database)
  const hrTo = Number(process.hrtime.bigint() / 1000n)
  const target = await headAtEnd(duringResult)
  const reachedHead = await clients.call({ cmd: "waitPosition", target, timeoutMs: 30_000 })
  const status = await clients.call({ cmd: "status" })
  const originSets = await origins(duringResult)
  const latencies = {}
  for (const o of originSets) latencies[o.name] = await clients.call({ cmd: "latency", seq0: o.seq0, times: o.times })
  const latency = latencies[originSets[0].name]
  let saved
  if (record) saved = await record({ w0, w1 })
  const d = delta(before, after)
  const n = status.open + status.closed
  return {
    seconds: w1.seconds,
    clients: n,
    delivered: w1.delivered,
    deliveredPerSecond: w1.delivered / w1.seconds,
    perClientPerSecond: w1.delivered / w1.seconds / n,
    framesPerSecond: w1.frames / w1.seconds,
    mbPerSecond: w1.bytes / w1.seconds / 1e6,
    loggedPerSecond: duringResult.logged / w1.seconds,
    latency,
    latencies,
    serverCpuMs: d.cpuMs.server,
    serverCpuUsPerChange: (d.cpuMs.server * 1000) / w1.delivered,
    cores: d.cores,
    status,
    reachedHead,
    complete: reachedHead.ok && status.closed === 0 && status.gaps === 0 && status.unexpected === 0 && latency.missing === 0,
    saved,
    clientWindowStart: w0.at,
    window: { from: hrFrom, to: hrTo }
  }
}
