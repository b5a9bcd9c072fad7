/**
 * Shared harness of bench/stream and bench/purchases (the patterns of bench/http/run.mjs): a fresh
 * PostgreSQL database, the built service in a child process, the admin API, CPU time from /proc,
 * waiting for a quiet machine, percentiles.
 */
import { execSync, fork, spawn, spawnSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { createServer } from "node:net"
import { cpus, freemem, totalmem } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))
/**
 * What `npm start` runs, from package.json's `scripts.start` (`exec node [flags] <file>`): its node
 * flags (the V8 settings the service ships with), which every bench passes whatever entry it runs,
 * and its file.
 */
export const START = (() => {
  const start = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts?.start ?? ""
  const match = start.match(/^(?:exec\s+)?node\s+((?:--\S+\s+)*)(\S+\.m?js)\s*$/)
  if (match === null) throw new Error(`package.json scripts.start is not "exec node [flags] <file>": ${start}`)
  return { nodeFlags: match[1].split(/\s+/).filter(Boolean), entry: join(ROOT, match[2]) }
})()
/**
 * The service entry every bench starts: what `npm start` runs, as the tests start it
 * (test/support/paths.ts), or BENCH_SERVICE_ENTRY (e.g. dist/src/main.js, the tsc output).
 */
export const MAIN = process.env.BENCH_SERVICE_ENTRY !== undefined ? join(ROOT, process.env.BENCH_SERVICE_ENTRY) : START.entry
export const ADMIN_TOKEN = "adm_bench_token_0123456789abcdef"
export const PG_SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
export const CLK_TCK = 100

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
export const log = (...a) => console.log(...a)
export const round = (x, d = 0) => Math.round(x * 10 ** d) / 10 ** d
export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
/** Nearest-rank percentile of a sorted numeric array. */
export const percentileSorted = (sorted, p) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]

export const argOptions = (argv, defaults) => {
  const out = { ...defaults }
  for (const key of Object.keys(defaults)) {
    const i = argv.indexOf(`--${key}`)
    if (i < 0) continue
    if (typeof defaults[key] === "boolean") out[key] = true
    else if (typeof defaults[key] === "number") out[key] = Number(argv[i + 1])
    else out[key] = argv[i + 1]
  }
  for (const key of Object.keys(defaults)) if (typeof defaults[key] === "boolean" && argv.includes(`--no-${key}`)) out[key] = false
  return out
}

export const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

/** `n` distinct free ports, each held until all are found (one after the other can repeat a port). */
export const freePorts = async (n) => {
  const servers = await Promise.all(Array.from({ length: n }, () =>
    new Promise((resolve, reject) => {
      const server = createServer()
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => resolve(server))
    })))
  const ports = servers.map((server) => server.address().port)
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  return ports
}

export const httpOk = (url, init) => fetch(url, init).then((r) => r.arrayBuffer().then(() => r.status === 200), () => false)

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

/**
 * CPU ms of the PostgreSQL backends serving `database` (pids from pg_stat_activity), as a map
 * pid -> ms; `pgCpuDelta(a, b)` sums the growth of each backend present at the end (a backend new
 * since `a` counts from 0). The PostgreSQL server is shared: other databases' backends are left out.
 */
export const pgBackendCpu = async (database, application) => {
  const pids = await withAdminClient((c) =>
    c.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()
     ${application ? "AND application_name = $2" : ""}`,
      application ? [database, application] : [database]
    )
  )
    .then((r) => r.rows.map((row) => row.pid))
  return new Map(pids.map((pid) => [pid, cpuMs(pid)]).filter(([, ms]) => !Number.isNaN(ms)))
}
export const pgCpuDelta = (a, b) => {
  let total = 0
  for (const [pid, ms] of b) total += ms - (a.get(pid) ?? 0)
  return total
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

const children = new Set()
export const childPids = () => new Set([...children].map((c) => c.pid))

const track = (child, label) => {
  children.add(child)
  let output = ""
  child.stdout?.on("data", (c) => {
    output += c
    if (output.length > 1_000_000) output = output.slice(-500_000)
  })
  child.stderr?.on("data", (c) => {
    output += c
    if (output.length > 1_000_000) output = output.slice(-500_000)
  })
  const exited = new Promise((resolve) =>
    child.once("exit", (code, signal) => {
      children.delete(child)
      resolve(code ?? signal)
    })
  )
  const stop = async (graceMs = 15_000) => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    const timer = setTimeout(() => {
      log(`  (${label} did not exit in ${graceMs} ms: SIGKILL)`)
      child.kill("SIGKILL")
    }, graceMs)
    const code = await exited
    clearTimeout(timer)
    return code
  }
  return { child, label, output: () => output, exited, stop }
}

/** `node args` with its output kept; `stop` ends it with SIGTERM (SIGKILL after 15 s). */
export const startChild = (args, env, label) => track(spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] }), label)

/** A forked node module with an IPC channel. */
export const forkChild = (module, args, env, label, execArgv = []) =>
  track(fork(module, args, { cwd: ROOT, env, execArgv, stdio: ["ignore", "pipe", "pipe", "ipc"] }), label)

/** A request/reply over a forked child's IPC channel: sends {id, ...msg}, resolves with the reply of that id. */
export const rpc = (proc) => {
  let next = 1
  const waiting = new Map()
  proc.child.on("message", (m) => {
    if (m && m.replyTo !== undefined && waiting.has(m.replyTo)) {
      waiting.get(m.replyTo)(m)
      waiting.delete(m.replyTo)
    }
  })
  proc.exited.then((code) => {
    for (const [, resolve] of waiting) resolve({ error: `${proc.label} exited with ${code}:\n${proc.output().slice(-4000)}` })
    waiting.clear()
  })
  return (msg) =>
    new Promise((resolve, reject) => {
      const id = next++
      waiting.set(id, (m) => (m.error ? reject(new Error(m.error)) : resolve(m)))
      proc.child.send({ ...msg, id })
    })
}

const onInterrupt = []
export const atInterrupt = (task) => onInterrupt.push(task)
const cleanupChildren = () => {
  for (const child of children) child.kill("SIGKILL")
}
process.on("exit", cleanupChildren)
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    cleanupChildren()
    for (const task of onInterrupt) await Promise.resolve().then(task).catch(() => undefined)
    process.exit(130)
  })
}

const newestMtime = (dir) => {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs)
  }
  return newest
}

export const buildIfNeeded = () => {
  const stale = !existsSync(MAIN) || newestMtime(join(ROOT, "src")) > statSync(MAIN).mtimeMs
  if (!stale) return log(`build: ${MAIN.slice(ROOT.length)} is up to date`)
  log("build: npm run build")
  try {
    execSync("npm run build", { cwd: ROOT, stdio: "inherit" })
  } catch (error) {
    if (!existsSync(MAIN)) throw error
    log(`WARNING: the build failed; measuring the existing ${MAIN.slice(ROOT.length)}`)
  }
}

/** A connected pg.Client; retries while the shared server is out of connections (53300). */
export const connectClient = async (connectionString, tries = 40) => {
  for (let i = 0;; i++) {
    const client = new pg.Client({ connectionString })
    client.on("error", () => undefined)
    try {
      await client.connect()
      return client
    } catch (e) {
      if (e.code !== "53300" || i >= tries) throw e
      await sleep(500)
    }
  }
}

export const withAdminClient = async (f) => {
  const client = await connectClient(PG_SERVER_URL)
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

export const createDatabase = async (prefix) => {
  const name = `${prefix}_${process.pid}`
  await withAdminClient((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => c.query(`CREATE DATABASE ${name}`)))
  const url = new URL(PG_SERVER_URL)
  url.pathname = `/${name}`
  const drop = () => withAdminClient((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  atInterrupt(async () => {
    await sleep(300)
    await drop()
  })
  return { name, url: url.toString(), drop }
}

/**
 * Holds the purchase worker off new purchases (a trigger sets each one's next_step_at a day ahead),
 * to measure the /buy path without the worker's share of the machine.
 */
export const deferPurchaseWorker = async (client) => {
  await client.query(`CREATE FUNCTION bench_defer_worker() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN NEW.next_step_at := now() + interval '1 day'; RETURN NEW; END $$`)
  await client.query(`CREATE TRIGGER bench_defer_worker BEFORE INSERT ON purchases FOR EACH ROW EXECUTE FUNCTION bench_defer_worker()`)
}

export const serviceEnv = ({ port, opsPort, databaseUrl, dataDir, extra = {} }) => {
  const env = {
    ...process.env,
    PORT: String(port),
    OPS_PORT: String(opsPort),
    HOST: "127.0.0.1",
    OPS_HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    DEMO_MERCHANT: "false",
    LOG_LEVEL: "warning",
    RATE_LIMIT_RPS: "1000000000",
    RATE_LIMIT_BURST: "1000000000",
    NODE_ENV: "production",
    ...extra
  }
  delete env.DATABASE_URL
  if (databaseUrl !== undefined) env.DATABASE_URL = databaseUrl
  return env
}

/**
 * Starts `node [flags of npm start] [nodeArgs] <MAIN>` (or `entry`) and waits until /ready on the ops port answers 200,
 * then, with `untilIdle`, until the process spends under 5 % of a core over a second (60 s at
 * most: in-flight purchases keep a worker busy). A restart on a populated database is ready at
 * once while its sync leader still reconciles the catalogue in the background (seconds of CPU at
 * 100,000 items), which a measurement must not include.
 */
export const startService = async ({ databaseUrl, dataDir, nodeArgs = [], extra = {}, readyTimeoutMs = 120_000, untilIdle = false, entry = MAIN }) => {
  const [port, opsPort] = await freePorts(2)
  const proc = startChild([...START.nodeFlags, ...nodeArgs, entry], serviceEnv({ port, opsPort, databaseUrl, dataDir, extra }), "service")
  const deadline = Date.now() + readyTimeoutMs
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`service exited with ${proc.child.exitCode}:\n${proc.output()}`)
    if (Date.now() > deadline) {
      await proc.stop()
      throw new Error(`service did not become ready:\n${proc.output()}`)
    }
    if (await httpOk(`http://127.0.0.1:${opsPort}/ready`)) break
    await sleep(100)
  }
  const idleDeadline = Math.min(deadline, Date.now() + 60_000)
  for (let cpu = cpuMs(proc.child.pid); untilIdle && Date.now() < idleDeadline;) {
    await sleep(1000)
    const now = cpuMs(proc.child.pid)
    if (now - cpu < 50) break
    cpu = now
  }
  return { ...proc, port, baseUrl: `http://127.0.0.1:${port}`, opsUrl: `http://127.0.0.1:${opsPort}` }
}

export const admin = async (service, path, body, method = "POST") => {
  const res = await fetch(`${service.opsUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return text === "" ? undefined : JSON.parse(text)
}

/** A merchant with an API key and a funded balance (USD). */
export const fundedMerchant = async (service, name, usd) => {
  const merchant = await admin(service, "/admin/merchants", { name, webhook_url: null })
  let left = usd
  let n = 0
  // one deposit is capped by the deposit rules; several smaller ones are safe
  while (left > 0) {
    const amount = Math.min(left, 100_000)
    await admin(service, "/admin/deposits", { merchant_id: merchant.merchant_id, network: "tron", amount, tx_id: `bench-${name}-${n++}` })
    left -= amount
  }
  return merchant
}

export const machineInfo = async () => {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8")
  const postgres = await withAdminClient((c) => c.query("SHOW server_version")).then((r) => r.rows[0].server_version)
  let revision = "unknown"
  try {
    revision = execSync("git rev-parse --short HEAD", { cwd: ROOT }).toString().trim() +
      (execSync("git status --porcelain src", { cwd: ROOT }).toString().trim() === "" ? "" : " (src modified)")
  } catch {
    // not a git checkout: the revision stays unknown
  }
  return {
    revision,
    nproc: Number(execSync("nproc").toString().trim()),
    cpuModel: cpuinfo.match(/model name\s*:\s*(.*)/)?.[1] ?? cpus()[0]?.model,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    freeMemoryGiB: round(freemem() / 2 ** 30, 1),
    node: process.version,
    postgres
  }
}

/** Pins a process and all its threads (worker threads too) to one core. */
export const pinProcess = (pid, core) => execSync(`taskset -a -c -p ${core} ${pid}`, { stdio: "ignore" })

/** wrk's latency line ("99%   12.34ms") in ms. */
const wrkLatencyMs = (stdout, percentile) => {
  const match = stdout.match(new RegExp(`^\\s*${percentile}%\\s+([\\d.]+)(us|ms|s)\\s*$`, "m"))
  if (match === null) return Number.NaN
  const value = Number(match[1])
  return match[2] === "us" ? value / 1000 : match[2] === "s" ? value * 1000 : value
}

/**
 * One `wrk -t1 -c<connections> --latency` run pinned to `core` (taskset), the method every HTTP
 * figure uses (autocannon tops out below a bare server's rate). Requests/s, p50 and p99 (ms), and
 * the answers that were not 2xx or 3xx.
 */
export const wrkLoad = ({ url, headers = {}, seconds, connections = 50, core = 1 }) => {
  const args = ["-c", String(core), "wrk", "-t1", `-c${connections}`, `-d${seconds}s`, "--latency"]
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`)
  const run = spawnSync("taskset", [...args, url], { encoding: "utf8" })
  if (run.status !== 0) throw new Error(`wrk failed (install it with apt-get install wrk): ${run.stderr || run.error}`)
  const requests = Number(run.stdout.match(/(\d+) requests in/)?.[1])
  return {
    rps: Number(run.stdout.match(/Requests\/sec:\s+([\d.]+)/)?.[1]),
    requests,
    p50: wrkLatencyMs(run.stdout, 50),
    p99: wrkLatencyMs(run.stdout, 99),
    non2xx: Number(run.stdout.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0)
  }
}
