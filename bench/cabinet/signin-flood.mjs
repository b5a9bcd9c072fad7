/**
 * bench/cabinet/signin-flood.mjs: a flood of cabinet sign-ins beside the merchant API's catalogue
 * reads. The password hashing is bounded per process (CABINET_PASSWORD_HASH_CONCURRENCY, _QUEUE):
 * does the API keep its rate and the process its memory while sign-ins pour in?
 *
 *   node bench/cabinet/signin-flood.mjs [--rate 200] [--duration 20] [--reads 2000] [--connections 32]
 *                                       [--saturate] [--database postgres|pglite] [--one-address]
 *                                       [--service-env NAME=value,...] [--wait-quiet 30]
 *
 * 1. A fresh database (PostgreSQL of BENCH_PG_URL, or a fresh PGlite data directory), the built
 *    service (what `npm start` runs) with its default cabinet settings, a merchant and its key.
 * 2. Reads, the API's normal work: GET /api/v1/merchant/items?limit=50 at --reads a second (100
 *    merchants polling at the default rate limit of 20 a second) over --connections keep-alive
 *    connections, each with one read in flight: a read is sent on time if a connection is free,
 *    so their rate falls when answers slow down (below 0.8 of the rate asked when the mean read
 *    takes longer than about connections / reads, 16 ms at the defaults). Three windows of
 *    --duration s: quiet, during the flood, quiet again; the rate during the flood is compared
 *    with the mean of the two quiet ones (target >= 0.8), and so are the latencies.
 *    --saturate reads as fast as `wrk -t1 -c<connections>` can instead: the machine's two cores
 *    are then shared by wrk, the service, PostgreSQL and the flood, and the figure says as much
 *    about wrk's share of the CPU as about the service.
 * 3. The flood: --rate sign-ins a second for --duration s (open loop: sent on time whatever the
 *    answers), each with a random login, password and code, from a random loopback address
 *    (127.x.y.z: many clients, so that each address's own budget of failures barely bites and the
 *    hashing bound is what holds); --one-address sends them all from 127.0.0.1. Every answer is
 *    counted by status, and so are timeouts (10 s) and connection errors (target: no 5xx, no
 *    timeouts).
 * 4. The service's RSS, sampled every 250 ms: its peak during the flood against the quiet
 *    windows' (target: within 100 MB); the password hashes it computed and the sign-ins its brakes
 *    refused, from /metrics.
 *
 * Nothing is pinned: the service, PostgreSQL and this script share the machine's cores, as they
 * would on a small host. Before each window the script waits (up to --wait-quiet s) for the
 * machine to be quiet. --service-env starts the service with other settings (e.g.
 * CABINET_PASSWORD_HASH_CONCURRENCY=1), to compare.
 */
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  admin,
  argOptions,
  buildIfNeeded,
  cpuMs,
  createDatabase,
  log,
  machineInfo,
  mean,
  percentileSorted,
  round,
  sleep,
  startService,
  waitQuiet
} from "../lib/harness.mjs"
import { openConnection } from "../lib/http-connection.mjs"

const opts = argOptions(process.argv.slice(2), {
  rate: 200,
  duration: 20,
  reads: 2000,
  connections: 32,
  saturate: false,
  database: "postgres",
  "one-address": false,
  /** Settings for the service, `NAME=value,NAME=value` (e.g. CABINET_PASSWORD_HASH_CONCURRENCY=1). */
  "service-env": "",
  "wait-quiet": 30
})
const SIGN_IN_TIMEOUT_MS = 10_000

// ---- measuring -----------------------------------------------------------------------------------

const rssMb = (pid) => {
  try {
    return Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)[1]) / 1024
  } catch {
    return Number.NaN
  }
}

/** Samples the process's RSS every 250 ms until `stop()`: the samples (MB). */
const sampleRss = (pid) => {
  const samples = []
  const timer = setInterval(() => samples.push(rssMb(pid)), 250)
  return { samples, stop: () => clearInterval(timer) }
}

/**
 * Reads at `rate` a second for `seconds` over `connections` keep-alive connections, one read in
 * flight on each (a read due when none is free is not sent): rate achieved, latencies, answers.
 */
const pacedReads = async (port, path, apiKey, rate, seconds, connections) => {
  const headers = { authorization: `Bearer ${apiKey}` }
  const idle = []
  for (let i = 0; i < connections; i++) idle.push(await openConnection("127.0.0.1", port))
  const latencies = []
  let non2xx = 0, timeouts = 0, errors = 0, skipped = 0, sent = 0
  const inFlight = new Set()
  const readOn = (connection) => {
    const started = performance.now()
    let timer
    const read = Promise.race([
      connection.request("GET", path, headers).then((res) => res.status, () => "error"),
      new Promise((resolve) => timer = setTimeout(() => resolve("timeout"), SIGN_IN_TIMEOUT_MS))
    ]).then(async (status) => {
      clearTimeout(timer)
      if (status === "timeout" || status === "error") {
        if (status === "timeout") timeouts++
        else errors++
        connection.close()
        idle.push(await openConnection("127.0.0.1", port))
      } else {
        latencies.push(performance.now() - started)
        if (status !== 200) non2xx++
        idle.push(connection)
      }
      inFlight.delete(read)
    })
    inFlight.add(read)
  }
  const started = performance.now()
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate)
    for (; sent < due; sent++) {
      const connection = idle.pop()
      if (connection === undefined) skipped++
      else readOn(connection)
    }
    await sleep(5)
  }
  const elapsed = (performance.now() - started) / 1000
  const answeredInWindow = latencies.length
  await Promise.all(inFlight)
  for (const connection of idle) connection.close()
  latencies.sort((a, b) => a - b)
  return {
    rate: answeredInWindow / elapsed,
    requests: latencies.length,
    non2xx,
    timeouts,
    errors,
    skipped,
    p50: percentileSorted(latencies, 50),
    p99: percentileSorted(latencies, 99),
    max: latencies.at(-1)
  }
}

/** wrk's run as a child process (this script goes on meanwhile): rate, requests, non-2xx, socket errors. */
const wrk = (url, apiKey, seconds) =>
  new Promise((resolve, reject) => {
    const child = spawn("wrk", ["-t1", `-c${opts.connections}`, `-d${seconds}s`, "--timeout", "10s", "-H", `Authorization: Bearer ${apiKey}`, url])
    let out = ""
    child.stdout.on("data", (c) => out += c)
    child.stderr.on("data", (c) => out += c)
    child.once("error", reject)
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`wrk failed (${code}): ${out}`))
      const errors = out.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/)
      resolve({
        rate: Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1]),
        requests: Number(out.match(/(\d+) requests in/)?.[1]),
        non2xx: Number(out.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0),
        socketErrors: errors === null ? 0 : errors.slice(1, 4).map(Number).reduce((a, b) => a + b, 0),
        timeouts: errors === null ? 0 : Number(errors[4])
      })
    })
  })

/** One sign-in from `localAddress` on a new connection: its status (or "timeout" / "error") and latency. */
const signIn = (service, localAddress) =>
  new Promise((resolve) => {
    const started = performance.now()
    const body = JSON.stringify({
      login: `flood-${randomBytes(6).toString("hex")}@attacker.example`,
      password: randomBytes(9).toString("base64"),
      code: String(randomBytes(3).readUIntBE(0, 3) % 1_000_000).padStart(6, "0")
    })
    let settled = false
    const done = (status) => {
      if (settled) return
      settled = true
      resolve({ status, ms: performance.now() - started })
    }
    const req = httpRequest({
      host: "127.0.0.1",
      port: service.port,
      localAddress,
      method: "POST",
      path: "/cabinet/api/login",
      agent: false,
      headers: { origin: service.baseUrl, "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      res.resume()
      res.once("end", () => done(res.statusCode))
      res.once("error", () => done("error"))
    })
    req.setTimeout(SIGN_IN_TIMEOUT_MS, () => {
      done("timeout")
      req.destroy()
    })
    req.once("error", () => done("error"))
    req.end(body)
  })

/** A random loopback address, 127.1.0.1 to 127.254.255.254 (never 127.0.0.1). */
const randomLoopback = () => {
  const [a, b, c] = randomBytes(3)
  return `127.${1 + (a % 254)}.${b}.${1 + (c % 254)}`
}

/** `rate` sign-ins a second for `seconds`, sent on a 10 ms tick whatever the answers: every answer. */
const flood = async (service, rate, seconds) => {
  const pending = []
  const started = performance.now()
  let sent = 0
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate)
    for (; sent < due; sent++) pending.push(signIn(service, opts["one-address"] ? "127.0.0.1" : randomLoopback()))
    await sleep(10)
  }
  return Promise.all(pending)
}

/** A counter's value in /metrics (its name with any labels); 0 when absent. */
const metric = async (service, series) => {
  const text = await fetch(`${service.opsUrl}/metrics`).then((r) => r.text())
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
}

// ---- the run -------------------------------------------------------------------------------------

buildIfNeeded()
const machine = await machineInfo()
log(`machine: ${machine.nproc} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, node ${machine.node}, PostgreSQL ${machine.postgres}`)
log(`revision ${machine.revision}; ${opts.database}`)
const readsWhat = opts.saturate ? `as fast as wrk -t1 -c${opts.connections} can` : `${opts.reads}/s over ${opts.connections} connections`
const from = opts["one-address"] ? "all from 127.0.0.1" : "each from a random 127.x.y.z"
log(`flood: ${opts.rate} sign-ins/s for ${opts.duration} s, ${from}; reads of /items: ${readsWhat}`)

const dataDir = mkdtempSync(join(tmpdir(), "signin-flood-"))
const database = opts.database === "pglite" ? undefined : await createDatabase("bench_signin_flood")
const serviceSettings = Object.fromEntries(opts["service-env"].split(",").filter(Boolean).map((pair) => pair.split("=")))
const service = await startService({ databaseUrl: database?.url, dataDir, untilIdle: true, extra: serviceSettings })
const merchant = await admin(service, "/admin/merchants", { name: "bench-reader", webhook_url: null })
const ITEMS = "/api/v1/merchant/items?limit=50"

const reads = (seconds) =>
  opts.saturate
    ? wrk(`${service.baseUrl}${ITEMS}`, merchant.api_key, seconds)
    : pacedReads(service.port, ITEMS, merchant.api_key, opts.reads, seconds, opts.connections)
await reads(3) // warm-up, not measured

/** The service's heap spaces (new, old) and external memory, MB, from /metrics. */
const heapOf = async () => {
  const mb = async (series) => round((await metric(service, series)) / 2 ** 20)
  return {
    new: await mb(`nodejs_heap_space_size_total_bytes{space="new"}`),
    old: await mb(`nodejs_heap_space_size_total_bytes{space="old"}`),
    external: await mb("nodejs_external_memory_bytes")
  }
}

/** One window of reads with `during` beside it: the reads' figures, the sign-ins' answers, RSS samples, CPU. */
const window = async (label, during) => {
  await waitQuiet(label, { maxSeconds: opts["wait-quiet"] })
  const rss = sampleRss(service.child.pid)
  const cpuBefore = cpuMs(service.child.pid)
  const [read, signIns] = await Promise.all([reads(opts.duration), during()])
  const cores = (cpuMs(service.child.pid) - cpuBefore) / (opts.duration * 1000)
  rss.stop()
  const heap = await heapOf()
  const latency = read.p50 === undefined ? "" : `, p50 ${round(read.p50, 2)} ms, p99 ${round(read.p99, 2)} ms, max ${round(read.max, 1)} ms`
  log(
    `  ${label.padEnd(14)} reads ${
      String(round(read.rate)).padStart(6)
    }/s${latency} (${read.requests} answered, ${read.non2xx} not 200, ${read.timeouts} timeouts, ${read.errors ?? read.socketErrors} connection errors)`
  )
  log(
    `  ${"".padEnd(14)} RSS ${round(Math.min(...rss.samples))}–${
      round(Math.max(...rss.samples))
    } MB (heap: new space ${heap.new}, old ${heap.old}, external ${heap.external} MB at the end); the service used ${round(cores, 2)} cores`
  )
  return { read, rss: rss.samples, signIns }
}

const hashesBefore = await metric(service, "cabinet_password_hashes_total")
const quietBefore = await window("quiet", async () => [])
const flooded = await window("sign-in flood", () => flood(service, opts.rate, opts.duration))
const quietAfter = await window("quiet again", async () => [])
const hashes = (await metric(service, "cabinet_password_hashes_total")) - hashesBefore
const refused = {}
for (const brake of ["login", "address", "capacity"]) refused[brake] = await metric(service, `cabinet_attempts_refused_total{brake="${brake}"}`)

const counts = {}
for (const { status } of flooded.signIns) counts[status] = (counts[status] ?? 0) + 1
const latencies = (status) => flooded.signIns.filter((s) => s.status === status).map((s) => s.ms).sort((a, b) => a - b)
const quietRate = mean([quietBefore.read.rate, quietAfter.read.rate])
const quietRss = Math.max(...quietBefore.rss)
const floodRss = Math.max(...flooded.rss)
const fivexx = Object.entries(counts).filter(([status]) => /^5/.test(status)).reduce((a, [, n]) => a + n, 0)
const readTimeouts = quietBefore.read.timeouts + flooded.read.timeouts + quietAfter.read.timeouts
const readsNot200 = quietBefore.read.non2xx + flooded.read.non2xx + quietAfter.read.non2xx

log("\nsummary")
log(
  `  reads during the flood / quiet: ${round(flooded.read.rate / quietRate, 3)} (${round(flooded.read.rate)} against ${
    round(quietRate)
  }/s, the mean of the quiet windows) — target >= 0.8`
)
if (!opts.saturate) {
  log(`  reads' p99 during the flood ${round(flooded.read.p99, 2)} ms against ${round(quietBefore.read.p99, 2)} and ${round(quietAfter.read.p99, 2)} ms quiet`)
}
log(
  `  RSS: peak ${round(floodRss)} MB during the flood against ${round(quietRss)} MB (the quiet window's peak): ${
    round(floodRss - quietRss)
  } MB more — target within 100`
)
log(`  sign-ins sent: ${flooded.signIns.length}; answers: ${JSON.stringify(counts)} — target: no 5xx (${fivexx}), no timeouts (${counts.timeout ?? 0})`)
for (const status of [401, 429]) {
  const ms = latencies(status)
  if (ms.length > 0) {
    log(`  ${status} answered in p50 ${round(percentileSorted(ms, 50), 1)} ms, p99 ${round(percentileSorted(ms, 99), 1)} ms, max ${round(ms.at(-1), 1)} ms`)
  }
}
log(`  password hashes computed: ${hashes} (${round(hashes / opts.duration, 1)}/s); refused unchecked, by brake: ${JSON.stringify(refused)}`)
log(`  reads not 200: ${readsNot200}, read timeouts: ${readTimeouts}`)

await service.stop()
await database?.drop()
rmSync(dataDir, { recursive: true, force: true })
