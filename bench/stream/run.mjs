/**
 * bench/stream: the realtime catalogue feed (CONTRACT 3) under many WebSocket clients, beside a
 * bare `ws` server broadcasting the same frames, in the same run.
 *
 *   node bench/stream/run.mjs [--scenarios 1000x1000,5000x100] [--source external|sim] [--duration 45]
 *                             [--warmup 10] [--idle 15] [--catalogue 20000] [--bare buffer[,string]] [--profile]
 *
 * Each scenario is CLIENTSxCHANGES_PER_SECOND. A scenario listed more than once
 * (`--scenarios 1000x1000,1000x1000,1000x1000`) is measured in rounds, and the summary adds the
 * ratio of the rounds' means. For each:
 *  1. A fresh database on BENCH_PG_URL's server; the built service (`node dist/src/main.js`) with
 *     SIM_CATALOGUE_SIZE=--catalogue, rate limits raised.
 *  2. The changes, --source:
 *     external (default): SIM_CHURN_PER_SECOND=0 and bench/stream/writer.mjs (child process)
 *       writes the rate into the change log, one transaction per 100 ms with the simulator's mix
 *       (half price changes, a quarter delistings, a quarter relistings), with ChangeLog.apply's
 *       statements, as the sync leader of another node would (CONTRACT 1): the offered rate does
 *       not depend on the service under test, which only tails the log and feeds the clients.
 *     sim: SIM_CHURN_PER_SECOND=the rate; the service's own simulator and sync leader write the
 *       changes in the same process. The simulator owes changes per 100 ms tick of its own clock,
 *       so when the process is short of CPU fewer changes are made: the logged rate is printed.
 *  3. Idle: --idle seconds with no feed client: the service's CPU for the changes alone.
 *  4. Service: a separate client process (bench/stream/clients.mjs) opens the clients (the
 *     external writer pauses meanwhile): the first from a full dump's X-Catalog-Cursor/Epoch, each
 *     next one from the freshest position a client has reached (a valid resume point). After
 *     --warmup seconds, a --duration window: changes delivered (each client checks every frame
 *     starts right after its previous cursor: cursor - previous == number of changes), latency
 *     of each change to each client, and CPU time of the service process per delivered change.
 *     Latency `fromTransactionStart`: from catalogue_changes.created_at (the writing transaction's
 *     now(), its start: an overstatement); `fromCommit`: from the arrival of that transaction's
 *     pg_notify (sent at commit, payload its last seq) at this script's LISTEN connection (a
 *     slight understatement). The target is judged on the first. Afterwards every client must
 *     reach the log's head as of the window's end.
 *  5. The service is stopped; the bare baseline (bench/stream/bare-server.mjs, child process)
 *     replays the window's frames at their timing to as many clients from a new client process:
 *     with --source external the writer's frames (the offered load, the same bytes the feed
 *     builds for each batch, at their commit times), with --source sim the frames client 0 got.
 *     Same figures (latency from the broadcast's start); its window is the replay. --bare lists
 *     send modes: `buffer` (default: each frame encoded once, ws.send(Buffer) to every client,
 *     the idiomatic `ws` broadcast) and `string` (ws.send(string): `ws` encodes per client).
 * --entry: a service entry other than npm start's (e.g. a copy of dist/ made before a change);
 * --nodeArgs: node flags for the service beside npm start's.
 * --profile: the service phase runs under `node --cpu-prof` (figures then include the profiler's
 * overhead); a summary of the window is printed and the profile kept in bench/stream/out/.
 *
 * All processes share the machine: the client process, the server under test and PostgreSQL
 * each get their CPU share reported ("rest" is everything else, other tenants included).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { printSummary, summarise } from "../http/cpuprofile-summary.mjs"
import {
  argOptions,
  buildIfNeeded,
  childPids,
  CLK_TCK,
  connectClient,
  cpuMs,
  createDatabase,
  forkChild,
  freePort,
  fundedMerchant,
  log,
  machineInfo,
  machineTicks,
  mean,
  otherBusyProcesses,
  pgBackendCpu,
  pgCpuDelta,
  round,
  rpc,
  sleep,
  startService,
  waitQuiet
} from "../lib/harness.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const OUT = join(HERE, "out")
const STREAM_PATH = "/api/v1/merchant/items/stream"

const argv = process.argv.slice(2)
const opts = argOptions(argv, {
  scenarios: "1000x1000,5000x100",
  duration: 45,
  warmup: 10,
  idle: 15,
  catalogue: 20000,
  bare: "buffer",
  parallel: 50,
  profile: false,
  source: "external",
  quietBusy: 25,
  waitQuiet: 60,
  entry: "",
  nodeArgs: ""
})

const scenarios = opts.scenarios.split(",").map((s) => {
  const [clients, rate] = s.split("x").map(Number)
  return { clients, rate }
})

/** CPU, machine and wall clock at one instant, for deltas over a window. */
const snapshot = async (pids, database) => ({
  pg: database ? await pgBackendCpu(database, "merchant-purchasing-service") : new Map(),
  t: performance.now(),
  ticks: machineTicks(),
  cpu: Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]))
})
const delta = (a, b) => {
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

const headSeq = async (client) => Number((await client.query("SELECT head_seq FROM catalogue_state")).rows[0].head_seq)

const startClients = async (label) => {
  const proc = forkChild(join(HERE, "clients.mjs"), [], { ...process.env, NODE_ENV: "production" }, label, ["--max-old-space-size=4096"])
  await new Promise((resolve, reject) => {
    proc.child.once("message", (m) => (m.ready ? resolve() : reject(new Error("clients did not start"))))
    proc.exited.then((code) => reject(new Error(`clients exited ${code}: ${proc.output()}`)))
  })
  return { ...proc, call: rpc(proc) }
}

const printPhase = (label, r) => {
  log(
    `  ${label.padEnd(14)} delivered ${String(round(r.deliveredPerSecond)).padStart(9)} changes/s` +
      ` (${round(r.perClientPerSecond, 1)}/s per client; log ${round(r.loggedPerSecond, 1)}/s)` +
      Object.entries(r.latencies).map(([k, l]) =>
        `\n${" ".repeat(17)}latency ${k}: p50 ${round(l.p50, 1)} ms p90 ${round(l.p90, 1)} ms p99 ${round(l.p99, 1)} ms max ${round(l.max, 1)} ms`
      ).join("") +
      `\n${" ".repeat(17)}server CPU ${round(r.serverCpuUsPerChange, 3)} µs/delivered change` +
      (r.feedCpuUsPerChange !== undefined ? ` (feed only, idle churn cost subtracted: ${round(r.feedCpuUsPerChange, 3)})` : "") +
      `; ${round(r.mbPerSecond, 1)} MB/s to clients, ${round(r.framesPerSecond)} frames/s` +
      `\n${" ".repeat(17)}cores: machine ${r.cores.machine} = server ${r.cores.server} + clients ${r.cores.clients}` +
      ` + its postgres backends ${r.cores.postgres} + rest ${round(r.cores.machine - r.cores.server - r.cores.clients - r.cores.postgres, 2)}` +
      `\n${" ".repeat(17)}every change delivered: ${r.complete ? "yes" : "NO"} (open ${r.status.open}, closed ${r.status.closed}` +
      ` ${JSON.stringify(r.status.closeCodes)}, gaps ${r.status.gaps}, unexpected ${r.status.unexpected}` +
      `${r.reachedHead.ok ? "" : `, ${r.reachedHead.behind} clients never reached the head`})`
  )
}

/** The measured window against whatever server: returns the figures; `origins` gives commit/broadcast times. */
const measureWindow = async ({ clients, serverPid, database, during, origins, record, headAtEnd }) => {
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

const runScenario = async ({ clients: N, rate }, dir) => {
  log(`\n=== ${N} clients at ${rate} changes/s (source: ${opts.source}) ===`)
  const result = { clients: N, rate, source: opts.source }
  const db = await createDatabase(`mps_bench_stream`)
  let dbClient
  let listener
  const notified = []
  let service, clients, writer
  try {
    await waitQuiet(`the ${N}x${rate} scenario`, { maxSeconds: opts.waitQuiet, quietBusy: opts.quietBusy })
    const profileDir = join(dir, `profile-${N}x${rate}`)
    if (opts.profile) mkdirSync(profileDir, { recursive: true })
    service = await startService({
      databaseUrl: db.url,
      dataDir: join(dir, `data-${N}x${rate}`),
      nodeArgs: [...opts.nodeArgs.split(/\s+/).filter(Boolean), ...(opts.profile ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [])],
      ...(opts.entry === "" ? {} : { entry: resolve(opts.entry) }),
      extra: { SIM_CATALOGUE_SIZE: String(opts.catalogue), SIM_CHURN_PER_SECOND: String(opts.source === "sim" ? rate : 0) }
    })
    dbClient = await connectClient(db.url)
    // pg_notify reaches listeners at commit: its arrival time is the commit time of its changes
    listener = await connectClient(db.url)
    listener.on("notification", (n) => notified.push([Number(n.payload), performance.timeOrigin + performance.now()]))
    await listener.query("LISTEN catalogue_changes")
    const merchant = await fundedMerchant(service, "bench-stream", 10)
    const auth = { authorization: `Bearer ${merchant.api_key}` }
    const dump = await fetch(`${service.baseUrl}/api/v1/merchant/items/full-dump`, { headers: auth })
    if (dump.status !== 200) throw new Error(`full dump: ${dump.status} ${await dump.text()}`)
    await dump.body?.cancel()
    const cursor = Number(dump.headers.get("x-catalog-cursor"))
    const epoch = Number(dump.headers.get("x-catalog-epoch"))
    log(`service ready; dump cursor ${cursor} epoch ${epoch}`)
    if (opts.source === "external") {
      writer = forkChild(join(HERE, "writer.mjs"), [], { ...process.env, DATABASE_URL: db.url, RATE: String(rate) }, "writer")
      await new Promise((resolve, reject) => {
        writer.child.once("message", resolve)
        writer.exited.then((code) => reject(new Error(`writer exited ${code}: ${writer.output()}`)))
      })
      writer.call = rpc(writer)
      await writer.call({ cmd: "start" })
      log(`  external writer: ${rate} changes/s into the change log`)
    }

    // idle: the churn alone
    await sleep(3000)
    const h0 = await headSeq(dbClient)
    const i0 = await snapshot({ server: service.child.pid }, db.name)
    await sleep(opts.idle * 1000)
    const i1 = await snapshot({ server: service.child.pid }, db.name)
    const h1 = await headSeq(dbClient)
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

    // the service under N clients (an external writer pauses while they connect: each client then
    // joins at the head, and the ramp is not slowed down by the feed to the clients already there)
    if (writer) await writer.call({ cmd: "pause" })
    clients = await startClients("clients")
    const connected = await clients.call({
      cmd: "connect",
      url: `ws://127.0.0.1:${service.port}${STREAM_PATH}`,
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
    const framesFile = join(dir, `frames-${N}x${rate}`)
    let headStart
    const svc = await measureWindow({
      clients,
      serverPid: service.child.pid,
      database: db.name,
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
      origins: async (d) => {
        const seq0 = Math.max(0, headStart - 50_000)
        const rows = (await dbClient.query(
          `SELECT seq, extract(epoch from created_at) * 1000 AS t FROM catalogue_changes WHERE seq > $1 AND seq <= $2 ORDER BY seq`,
          [seq0, d.headEnd + 50_000]
        )).rows
        const times = []
        for (const r of rows) times[Number(r.seq) - seq0] = Number(r.t)
        // commit: the arrival of the writing transaction's pg_notify (payload: its last seq) at our listener
        const committed = []
        const notes = [...notified].sort((a, b) => a[0] - b[0])
        let k = 0
        for (let seq = seq0 + 1; seq <= d.headEnd + 50_000 && k < notes.length; seq++) {
          while (k < notes.length && notes[k][0] < seq) k++
          if (k < notes.length) committed[seq - seq0] = notes[k][1]
        }
        return [
          { name: "fromTransactionStart", seq0, times },
          { name: "fromCommit", seq0, times: committed }
        ]
      }
    })
    svc.feedCpuUsPerChange = ((svc.serverCpuMs - result.idle.serverCpuMsPerSecond * svc.seconds) * 1000) / svc.delivered
    result.service = svc
    printPhase("service", svc)
    const others = await otherBusyProcesses(1000, new Set([...childPids(), process.pid]))
    if (others.length > 0) log(`  other busy processes just after: ${others.slice(0, 4).map((o) => `${o.cores} ${o.cmd}`).join(" | ")}`)
    result.othersAfterService = others.slice(0, 6)
    await clients.call({ cmd: "close" })
    await clients.stop()
    clients = undefined
    if (writer) {
      const w = await writer.call({ cmd: "stop" })
      const slow = w.batches.filter((b) => b[3] - b[2] > 50).length
      log(`  external writer: ${w.written} changes in ${w.batches.length} transactions; ${slow} took over 50 ms`)
      await writer.stop()
      writer = undefined
    }
    await service.stop(opts.profile ? 120_000 : 15_000)
    service = undefined
    if (opts.profile) {
      const file = readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
      if (file !== undefined) {
        const summary = summarise(JSON.parse(readFileSync(join(profileDir, file), "utf8")), { top: 25, ...svc.window })
        log(`  profile: ${join(profileDir, file)} (the measured window only)`)
        printSummary(summary, (...a) => log("   ", ...a))
        result.profile = { file: join(profileDir, file), summary }
      }
    }

    // the bare baseline, replaying the window's frames
    result.bare = {}
    for (const mode of opts.bare.split(",").filter(Boolean)) {
      await sleep(2000)
      const port = await freePort()
      const bare = forkChild(join(HERE, "bare-server.mjs"), [], {
        ...process.env,
        NODE_ENV: "production",
        FRAMES: framesFile,
        PORT: String(port),
        SEND: mode
      }, "bare")
      const info = await new Promise((resolve, reject) => {
        bare.child.once("message", resolve)
        bare.exited.then((code) => reject(new Error(`bare exited ${code}: ${bare.output()}`)))
      })
      const call = rpc(bare)
      try {
        clients = await startClients("clients-bare")
        const c = await clients.call({
          cmd: "connect",
          url: `ws://127.0.0.1:${port}${STREAM_PATH}`,
          headers: auth,
          n: N,
          cursor: info.startCursor,
          epoch,
          parallel: opts.parallel
        })
        if (c.connected < N) throw new Error(`bare: only ${c.connected} clients connected`)
        await sleep(2000)
        const b = await measureWindow({
          clients,
          serverPid: bare.child.pid,
          during: async () => {
            const r = await call({ cmd: "replay" })
            const last = r.origins[r.origins.length - 1]
            return { origins: r.origins, headEnd: last[1], logged: last[1] - r.origins[0][0] + 1 }
          },
          headAtEnd: async (d) => d.headEnd,
          origins: async (d) => {
            const seq0 = d.origins[0][0]
            const times = []
            for (const [from, to, at] of d.origins) for (let s = from; s <= to; s++) times[s - seq0] = at
            return [{ name: "fromBroadcast", seq0, times }]
          }
        })
        result.bare[mode] = b
        printPhase(`bare (${mode})`, b)
        await clients.call({ cmd: "close" })
        await clients.stop()
        clients = undefined
      } finally {
        await bare.stop()
      }
    }
    const base = result.bare.buffer ?? Object.values(result.bare)[0]
    if (base) {
      result.baselineCpuUsPerChange = base.serverCpuUsPerChange
      result.cpuRatio = svc.serverCpuUsPerChange / base.serverCpuUsPerChange
      result.feedCpuRatio = svc.feedCpuUsPerChange / base.serverCpuUsPerChange
      result.targets = {
        everyChangeDelivered: svc.complete,
        p99Under250: svc.latency.p99 < 250,
        cpuWithin125: result.cpuRatio <= 1.25
      }
    }
    return result
  } finally {
    if (clients) await clients.stop()
    if (writer) await writer.stop()
    if (service) await service.stop()
    await dbClient?.end().catch(() => undefined)
    await listener?.end().catch(() => undefined)
    await sleep(300)
    await db.drop().catch((e) => log(`could not drop ${db.name}: ${e.message}`))
  }
}

const main = async () => {
  const started = new Date()
  const info = await machineInfo()
  log(`bench/stream ${started.toISOString()}`)
  log(`machine: ${info.nproc} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB, node ${info.node}, PostgreSQL ${info.postgres}; revision ${info.revision}`)
  log(`settings: ${JSON.stringify(opts)}`)
  buildIfNeeded()
  mkdirSync(OUT, { recursive: true })
  const dir = mkdtempSync(join(OUT, `run-${started.toISOString().replace(/[:.]/g, "-")}-`))
  const results = { date: started.toISOString(), command: `node bench/stream/run.mjs ${argv.join(" ")}`.trim(), machine: info, options: opts, scenarios: [] }
  for (const s of scenarios) results.scenarios.push(await runScenario(s, dir))

  log(`\nsummary (server CPU per delivered change; ratio = service / bare(buffer); target: all delivered, p99 < 250 ms, CPU ratio <= 1.25)`)
  log(`  scenario        server         log/s  delivered/s   per client/s   p50 ms   p99 ms   CPU µs/change  ratio  all delivered`)
  for (const s of results.scenarios) {
    const rows = [["service", s.service], ...Object.entries(s.bare).map(([k, v]) => [`bare ${k}`, v])]
    for (const [name, r] of rows) {
      log(
        `  ${`${s.clients}x${s.rate}`.padEnd(14)}  ${name.padEnd(12)}  ${String(round(r.loggedPerSecond)).padStart(5)}  ${
          String(round(r.deliveredPerSecond)).padStart(11)
        }  ${String(round(r.perClientPerSecond, 1)).padStart(13)}` +
          `  ${String(round(r.latency.p50, 1)).padStart(7)}  ${String(round(r.latency.p99, 1)).padStart(7)}  ${
            String(round(r.serverCpuUsPerChange, 3)).padStart(13)
          }` +
          `  ${name === "service" ? String(round(s.cpuRatio ?? NaN, 2)).padStart(5) : "     "}  ${r.complete ? "yes" : "NO"}`
      )
    }
  }
  // a scenario listed more than once is measured in rounds (service then bare, each round): the
  // ratio of the rounds' means is steadier than one round's, the bare's figure moving the most
  const rounds = new Map()
  for (const s of results.scenarios.filter((s) => s.cpuRatio !== undefined)) {
    const name = `${s.clients}x${s.rate}`
    rounds.set(name, [...(rounds.get(name) ?? []), s])
  }
  for (const [name, runs] of rounds) {
    if (runs.length < 2) continue
    const service = mean(runs.map((s) => s.service.serverCpuUsPerChange))
    const bare = mean(runs.map((s) => s.baselineCpuUsPerChange))
    const ratios = runs.map((s) => round(s.cpuRatio, 2))
    const p99s = runs.map((s) => round(s.service.latency.p99, 1))
    log(
      `  ${name} over ${runs.length} rounds: service ${round(service, 3)}, bare ${round(bare, 3)} µs/change: ratio of the means ${round(service / bare, 2)}` +
        ` (rounds ${ratios.join(", ")}); service p99 ${p99s.join(", ")} ms; all delivered in every round: ${
          runs.every((s) => s.service.complete) ? "yes" : "NO"
        }`
    )
  }
  const file = join(OUT, `results-${started.toISOString().replace(/[:.]/g, "-")}.json`)
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n")
  log(`\nresults: ${file}`)
  if (!opts.profile) rmSync(dir, { recursive: true, force: true })
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
