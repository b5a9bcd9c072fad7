/**
 * bench/http diagnostic: where does the service's per-request CPU go? Measures the CPU time per
 * request (utime + stime of the server process, less its idle background rate) of
 *   bare     node:http + pg (bench/http/bare-server.mjs)
 *   L0..L5   the same endpoint built up one Effect layer at a time (bench/diagnostics/ladder-server.mjs)
 *   service  what `npm start` runs (node dist/bundle/main.mjs)
 * under the same autocannon load, one server at a time, interleaved over --reps rounds.
 * Reports the minimum and the median over the rounds: on a shared machine the minimum is the
 * best estimate of the uncontended cost.
 *
 *   node bench/diagnostics/ladder.mjs [--reps 6] [--duration 3] [--connections 50] [--only bare,L0,service]
 */
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
import { START } from "../lib/harness.mjs"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const HERE = fileURLToPath(new URL("./", import.meta.url))
/** What `npm start` runs (package.json scripts.start: `node [flags] <file>`). */
const MAIN = START.entry
const PG_SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const ADMIN_TOKEN = "adm_bench_token_0123456789abcdef"
const PATH = "/api/v1/merchant/balance"

const argv = process.argv.slice(2)
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback
}
const reps = Number(option("reps", 6))
const duration = Number(option("duration", 3))
const connections = Number(option("connections", 50))
const variants = option("only", "bare,L0,L1,L2,L3,L4,L5,service").split(",")

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const freePort = () =>
  new Promise((resolve) => {
    const s = createServer()
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
const cpuMs = (pid) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(f[11]) + Number(f[12])) * 10
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const withAdmin = async (f) => {
  const c = new pg.Client({ connectionString: PG_SERVER_URL })
  await c.connect()
  try {
    return await f(c)
  } finally {
    await c.end()
  }
}

if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: npm run build`)
const dbName = `mps_bench_ladder_${process.pid}`
await withAdmin((c) => c.query(`CREATE DATABASE ${dbName}`))
const dbUrl = Object.assign(new URL(PG_SERVER_URL), { pathname: `/${dbName}` }).toString()
const tmp = mkdtempSync(join(tmpdir(), "mps-ladder-"))
const running = new Set()
process.on("exit", () => {
  for (const c of running) c.kill("SIGKILL")
})
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    for (const c of running) c.kill("SIGKILL")
    await sleep(500)
    await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)).catch(() => undefined)
    rmSync(tmp, { recursive: true, force: true })
    process.exit(130)
  })
}

const start = async (variant) => {
  const port = await freePort()
  const opsPort = await freePort()
  const env = {
    ...process.env,
    PORT: String(port),
    OPS_PORT: String(opsPort),
    HOST: "127.0.0.1",
    OPS_HOST: "127.0.0.1",
    DATABASE_URL: dbUrl,
    DATA_DIR: tmp,
    ADMIN_TOKEN,
    DEMO_MERCHANT: "false",
    LOG_LEVEL: "warning",
    RATE_LIMIT_RPS: "1000000000",
    RATE_LIMIT_BURST: "1000000000",
    POOL_MAX: "20",
    LEVEL: variant
  }
  const script = variant === "service" ? MAIN : variant === "bare" ? join(HERE, "../http/bare-server.mjs") : join(HERE, "ladder-server.mjs")
  const child = spawn(process.execPath, variant === "service" ? [...START.nodeFlags, script] : [script], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
  running.add(child)
  let output = ""
  child.stdout.on("data", (c) => {
    output += c
  })
  child.stderr.on("data", (c) => {
    output += c
  })
  const probe = variant === "service" ? `http://127.0.0.1:${opsPort}/ready` : `http://127.0.0.1:${port}${PATH}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${variant} did not start:\n${output}`)
    const up = await fetch(probe).then((r) => variant !== "service" || r.ok, () => false)
    if (up) break
    await sleep(50)
  }
  const stop = async () => {
    child.kill("SIGTERM")
    if (child.exitCode === null) await new Promise((r) => child.once("exit", r))
    running.delete(child)
  }
  return { child, baseUrl: `http://127.0.0.1:${port}`, opsUrl: `http://127.0.0.1:${opsPort}`, stop }
}

const results = Object.fromEntries(variants.map((v) => [v, []]))
try {
  // a merchant with a balance, through the service's admin API
  const service = await start("service")
  const admin = (path, body) =>
    fetch(`${service.opsUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then((r) => r.json())
  const merchant = await admin("/admin/merchants", { name: "ladder" })
  await admin("/admin/deposits", { merchant_id: merchant.merchant_id, network: "tron", amount: 1010.1 })
  const apiKey = merchant.api_key
  const expected = await fetch(`${service.baseUrl}${PATH}`, { headers: { authorization: `Bearer ${apiKey}` } }).then((r) => r.text())
  await service.stop()

  console.log(`ladder: ${connections} connections, ${duration} s per measurement, ${reps} rounds; CPU µs per request (server process, net of its idle rate)`)
  for (let rep = 0; rep < reps; rep++) {
    for (const variant of variants) {
      const server = await start(variant)
      const opts = { url: `${server.baseUrl}${PATH}`, headers: { authorization: `Bearer ${apiKey}` }, connections }
      if (rep === 0) {
        const body = await fetch(opts.url, { headers: opts.headers }).then((r) => r.text())
        if (body !== expected) throw new Error(`${variant} answers ${body}, the service ${expected}`)
      }
      // background work of an idle server (the service's simulator, timers): measured before any load
      await sleep(1500)
      const idle0 = cpuMs(server.child.pid)
      await sleep(2000)
      const idlePerSecond = (cpuMs(server.child.pid) - idle0) / 2
      await autocannon({ ...opts, duration: 1 })
      const c0 = cpuMs(server.child.pid)
      const r = await autocannon({ ...opts, duration })
      const c1 = cpuMs(server.child.pid)
      await server.stop()
      const us = ((c1 - c0 - idlePerSecond * duration) * 1000) / r.requests.total
      results[variant].push({ us, rps: r.requests.average, non2xx: r.non2xx })
      console.log(
        `  round ${rep + 1} ${variant.padEnd(8)} ${String(Math.round(r.requests.average)).padStart(6)} req/s ${String(Math.round(us)).padStart(6)} µs/req` +
          `${idlePerSecond > 0 ? ` (idle ${idlePerSecond} ms/s)` : ""}${r.non2xx ? ` non2xx ${r.non2xx}` : ""}`
      )
    }
  }
  console.log("\nvariant    min µs/req  median µs/req  best req/s")
  for (const [variant, rs] of Object.entries(results)) {
    const us = rs.map((r) => r.us)
    console.log(
      `  ${variant.padEnd(8)} ${String(Math.round(Math.min(...us))).padStart(10)} ${String(Math.round(median(us))).padStart(14)} ${
        String(Math.round(Math.max(...rs.map((r) => r.rps)))).padStart(11)
      }`
    )
  }
} finally {
  for (const c of running) c.kill("SIGKILL")
  await sleep(500)
  await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`))
  rmSync(tmp, { recursive: true, force: true })
}
