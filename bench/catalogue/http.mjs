/**
 * bench/catalogue's HTTP load: the search, a filtered page and the gzip full dump under wrk, the
 * service against a bare `node:http` server (bare-server.mjs) that replays the service's own
 * response bytes for the same URLs, in alternating rounds; the ratios of the medians.
 */
import { writeFileSync } from "node:fs"
import { request } from "node:http"
import { join } from "node:path"
import { gunzipSync } from "node:zlib"
import { pinProcess, wrkLoad } from "../lib/harness.mjs"
import { cpuMs, freePort, HERE, log, median, round, sleep, startChild, waitQuiet } from "./lib.mjs"

const API = "/api/v1/merchant"

/**
 * The search and the filtered page measured (the search by the most common name of the data), and
 * the full dump as gzip over 4 connections (issue 26's method for the dump).
 */
const SEARCH_NAME = "AK-47 | Redline (Field-Tested)"
export const ENDPOINTS = [
  { key: "search", path: `${API}/items/search?market_hash_name=${encodeURIComponent(SEARCH_NAME)}&max_price=500&limit=10` },
  { key: "items", path: `${API}/items?category=rifle&exterior=Field-Tested&min_price=5&max_price=50&delivery_type=instant&limit=50` },
  { key: "dump", path: `${API}/items/full-dump`, headers: { "accept-encoding": "gzip" }, connections: 4 }
]

const startBare = async (responsesFile) => {
  const port = await freePort()
  const proc = startChild(process.execPath, [join(HERE, "bare-server.mjs")], {
    env: { ...process.env, NODE_OPTIONS: "", PORT: String(port), HOST: "127.0.0.1", RESPONSES: responsesFile, NODE_ENV: "production" },
    label: "bare"
  })
  const deadline = Date.now() + 15_000
  while (!proc.output().includes("listening")) {
    if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(`bare server did not start:\n${proc.output()}`)
    await sleep(20)
  }
  return { ...proc, baseUrl: `http://127.0.0.1:${port}` }
}

/** One GET, its body as sent (not decompressed: the dump's gzip bytes are what is compared). */
const fetchOnce = (url, apiKey, headers = {}) =>
  new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${apiKey}`, ...headers } }, (res) => {
      const chunks = []
      res.on("data", (chunk) => chunks.push(chunk))
      res.on("end", () =>
        resolve({
          status: res.statusCode,
          contentType: res.headers["content-type"],
          contentEncoding: res.headers["content-encoding"],
          headers: new Map(Object.entries(res.headers)),
          body: Buffer.concat(chunks)
        }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })

const load = (opts, url, apiKey, seconds, endpoint) =>
  wrkLoad({
    url,
    headers: { authorization: `Bearer ${apiKey}`, ...endpoint.headers },
    seconds,
    connections: endpoint.connections ?? opts.connections,
    core: 1
  })

/**
 * Warm-up (discarded), then a measured run of wrk pinned to core 1 (the server is pinned to core
 * 0); with the server process's CPU time (all its threads) over the run.
 */
export const measure = async ({ opts }, target, endpoint, apiKey, ownPids, { quiet = true } = {}) => {
  const path = endpoint.path
  const busyBefore = quiet
    ? await waitQuiet(`${target.label} ${path.split("?")[0]}`, { seconds: opts.waitQuiet, quietBusy: opts.quietBusy, ownPids })
    : NaN
  load(opts, target.baseUrl + path, apiKey, opts.warmup, endpoint)
  await sleep(200)
  const from = Number(process.hrtime.bigint() / 1000n)
  const cpuBefore = cpuMs(target.pid)
  const result = load(opts, target.baseUrl + path, apiKey, opts.duration, endpoint)
  const cpuAfter = cpuMs(target.pid)
  const to = Number(process.hrtime.bigint() / 1000n)
  return {
    window: { from, to },
    ...result,
    cpuUsPerRequest: ((cpuAfter - cpuBefore) * 1000) / result.requests,
    coresServer: (cpuAfter - cpuBefore) / (opts.duration * 1000),
    othersBusyBefore: busyBefore
  }
}

export const printRun = ({ opts }, label, r) =>
  log(
    `    ${label.padEnd(8)} ${String(round(r.rps)).padStart(7)} req/s  p50 ${String(round(r.p50, 2)).padStart(5)} ms  p99 ${
      String(round(r.p99, 2)).padStart(6)
    } ms` +
      `  server ${round(r.cpuUsPerRequest)} µs CPU/req (${round(r.coresServer, 2)} cores)  non2xx ${r.non2xx}` +
      (r.othersBusyBefore * 100 >= opts.quietBusy ? `  [others ${round(r.othersBusyBefore * 100)} % busy before]` : "")
  )

export const httpBench = async (bench, service, apiKey, tmp) => {
  const { opts } = bench
  const responses = {}
  const shapes = {}
  for (const e of ENDPOINTS) {
    const r = await fetchOnce(service.baseUrl + e.path, apiKey, e.headers)
    if (r.status !== 200) throw new Error(`${e.path}: ${r.status} ${r.body.toString().slice(0, 500)}`)
    const parsed = JSON.parse(r.contentEncoding === "gzip" ? gunzipSync(r.body).toString() : r.body.toString())
    const count = (parsed.results ?? parsed.items).length
    responses[e.path] = { status: r.status, contentType: r.contentType, contentEncoding: r.contentEncoding, body: r.body.toString("base64") }
    shapes[e.key] = { bytes: r.body.length, items: count, contentType: r.contentType, serviceHeaders: [...r.headers.keys()] }
    log(`  ${e.key}: GET ${e.path} -> ${r.status}, ${count} items, ${r.body.length} bytes`)
  }
  const file = join(tmp, `responses-${service.size}.json`)
  writeFileSync(file, JSON.stringify(responses))
  const bare = await startBare(file)
  try {
    for (const e of ENDPOINTS) {
      const a = await fetchOnce(service.baseUrl + e.path, apiKey, e.headers)
      const b = await fetchOnce(bare.baseUrl + e.path, apiKey, e.headers)
      if (!a.body.equals(b.body) || a.contentType !== b.contentType || a.contentEncoding !== b.contentEncoding) {
        throw new Error(`${e.key}: the bare server does not answer the service's bytes`)
      }
      shapes[e.key].serviceOnlyHeaders = [...a.headers.keys()].filter((h) => !b.headers.has(h))
    }
    log(`  bare baseline answers byte-identical bodies; headers only the service sends: ${shapes.search.serviceOnlyHeaders.join(", ")}`)
    log(`  load: ${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.duration} s, ${opts.rounds} rounds alternating`)
    const out = {}
    const own = [service.pid, bare.pid]
    // every server under load on core 0 (worker threads too), wrk on core 1
    for (const pid of own) pinProcess(pid, 0)
    for (const e of ENDPOINTS) {
      log(`  ${e.key}`)
      const runs = { service: [], bare: [] }
      for (let i = 0; i < opts.rounds; i++) {
        for (const which of i % 2 === 0 ? ["service", "bare"] : ["bare", "service"]) {
          const r = await measure(bench, which === "service" ? service : bare, e, apiKey, own)
          if (r.non2xx > 0) log(`    WARNING: ${which} had ${r.non2xx} answers other than 2xx or 3xx`)
          runs[which].push(r)
          printRun(bench, which, r)
        }
      }
      // the ratio of the medians of the rounds
      const agg = (rs) => ({
        rps: median(rs.map((r) => r.rps)),
        p50: median(rs.map((r) => r.p50)),
        p99: median(rs.map((r) => r.p99)),
        cpuUsPerRequest: median(rs.map((r) => r.cpuUsPerRequest))
      })
      const s = agg(runs.service)
      const b = agg(runs.bare)
      out[e.key] = { path: e.path, ...shapes[e.key], runs, service: s, bare: b, ratio: s.rps / b.rps }
      log(
        `    => service ${round(s.rps)} req/s p99 ${round(s.p99, 1)} ms | bare ${round(b.rps)} req/s p99 ${round(b.p99, 1)} ms | ratio ${
          round(s.rps / b.rps, 3)
        } (target >= 0.6: ${s.rps / b.rps >= 0.6 ? "MET" : "NOT MET"}); CPU per request ${round(s.cpuUsPerRequest)} against ${round(b.cpuUsPerRequest)} µs`
      )
    }
    return out
  } finally {
    await bare.stop()
  }
}
