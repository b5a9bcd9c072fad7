/**
 * The service under test: what `npm start` runs, built if src/ is newer, started as a child process
 * on free ports until it is ready, and its admin API (merchants, deposits).
 */
import { execSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { log, ROOT, sleep } from "./basics.mjs"
import { startChild } from "./children.mjs"
import { cpuMs } from "./cpu.mjs"
import { freePorts, httpOk } from "./ports.mjs"

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
