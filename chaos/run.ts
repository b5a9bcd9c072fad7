/**
 * The chaos command: `npm run chaos -- --duration 60 [--seed N] [--clients N]`.
 *
 * Two service nodes on a fresh PostgreSQL database (made from DATABASE_URL's server, default
 * postgres://postgres@127.0.0.1:5432/test, and dropped at the end), each through its own TCP proxy.
 * For `--duration` seconds merchants buy on all three paths, deposit, change the catalogue, ask for
 * deposit wallets, receive webhooks and follow the realtime feed, every client repeating what got
 * no answer or a 5xx as a well-behaved client does; meanwhile a node is killed (kill -9) and
 * started again, has its database connections cut (and refused for seconds), or is restarted
 * gracefully. Then the invariants are checked and printed as PASS or FAIL with their figures; the
 * exit code is 1 when any failed (2 when the run itself could not be made).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { parseArgs } from "node:util"
import { buildIfStale } from "../test/support/build.js"
import { type FreshDatabase, freshDatabase } from "../test/support/database.js"
import { TMP } from "../test/support/paths.js"
import { type PgProxy, startPgProxy } from "../test/support/pg-proxy.js"
import { PURCHASE_ENV } from "../test/support/purchase-requests.js"
import { type Receiver, startReceiver } from "../test/support/webhooks.js"
import { feedCheck, walletCheck, webhookCheck } from "./checks-delivery.js"
import { moneyChecks } from "./checks-money.js"
import { faultCheck, logCheck, serverErrorCheck } from "./checks-nodes.js"
import { Cluster } from "./cluster.js"
import { injectFaults } from "./faults.js"
import { FeedFollower } from "./feeds.js"
import { type AnswerLog, type Check, log, passed, printChecks, randomFrom } from "./report.js"
import { WalletClients } from "./wallets.js"
import { Workload } from "./workload.js"

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "60" },
    seed: { type: "string" },
    clients: { type: "string", default: "6" }
  }
})
const durationS = Number(values.duration)
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed)
const clients = Number(values.clients)
if (!(durationS > 0) || !Number.isInteger(seed) || !(clients > 0)) {
  process.stderr.write("usage: npm run chaos -- [--duration SECONDS] [--seed N] [--clients N]\n")
  process.exit(2)
}

/** The nodes' settings: the purchase tests' quick simulator, fast webhook retries, wallets issued, a short drain. */
const ENV: Record<string, string> = {
  ...PURCHASE_ENV,
  DUMP_INTERVAL_SECONDS: "5",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  // a 2 s attempt timeout gives a 23 s lease: the longest a killed node's events wait for the other
  WEBHOOK_TIMEOUT_SECONDS: "2",
  WEBHOOK_RETRY_SCHEDULE: "0,1,1,1,1,1,1,1,1,1,1,1",
  WALLET_ISSUANCE_ENABLED: "true",
  SHUTDOWN_GRACE_SECONDS: "10"
}

let database: FreshDatabase | undefined
let receiver: Receiver | undefined
const proxies: Array<PgProxy> = []
let cluster: Cluster | undefined

const cleanUp = async () => {
  await cluster?.stopAll().catch(() => undefined)
  cluster?.killAll()
  await Promise.all(proxies.map((p) => p.close()))
  await database?.drop().catch((error) => log(`could not drop the database: ${String(error)}`))
  await receiver?.close()
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the nodes and dropping the database`)
    cluster?.killAll()
    void Promise.resolve(database?.drop()).finally(() => process.exit(130))
  })
}

/** Each process's output (its log lines at WARN and above), kept in .tmp/chaos/ for a failure's diagnosis. */
const saveOutputs = () => {
  if (cluster === undefined) return
  const dir = `${TMP}chaos/${new Date().toISOString().replace(/[:.]/g, "-")}-seed-${seed}`
  mkdirSync(dir, { recursive: true })
  for (const { number, server, slot } of cluster.incarnations) writeFileSync(`${dir}/node-${slot}-process-${number}.log`, server.output())
  log(`the nodes' output: ${dir}/`)
}

const run = async (): Promise<ReadonlyArray<Check>> => {
  const serverUrl = process.env["DATABASE_URL"] || "postgres://postgres@127.0.0.1:5432/test"
  process.env["DATABASE_URL"] = serverUrl
  mkdirSync(TMP, { recursive: true })
  log("building dist/ if a source is newer than the bundle")
  buildIfStale()
  const started = Date.now()
  receiver = await startReceiver()
  database = await freshDatabase()
  const target = new URL(serverUrl)
  for (let slot = 0; slot < 2; slot++) proxies.push(await startPgProxy({ host: target.hostname, port: Number(target.port || 5432) }))
  cluster = await Cluster.start(database, proxies, ENV)
  log(`two nodes up on ${database.url!.replace(/\/\/[^@]*@/, "//")} in ${((Date.now() - started) / 1000).toFixed(1)} s; seed ${seed}`)

  const answers: AnswerLog = []
  const workload = await Workload.start(cluster, receiver, answers, { merchants: 4, clients })
  const followers = workload.merchants.slice(0, 3).map((m) => new FeedFollower(cluster!, m.apiKey, answers))
  for (const f of followers) f.start()
  const wallets = new WalletClients(cluster, answers, 2)
  log(`load running: ${clients} writers, ${followers.length} feed clients, 2 wallet clients, balance reads; faults for ${durationS} s`)

  const faults = await injectFaults(cluster, Date.now() + durationS * 1000, randomFrom(seed))
  log(`faults over (${faults.length}); stopping the load`)
  const answeredAll = await workload.stop(60_000)
  await wallets.stop()
  log(`load stopped: ${workload.traffic.sent.length} writes${answeredAll ? "" : ", some still without a final answer after 60 s"}; checking`)

  const node = await cluster.anyLive()
  const checks: Array<Check> = [faultCheck(cluster, faults, durationS)]
  checks.push(...await moneyChecks(node, workload))
  checks.push(await webhookCheck(node, workload.merchants, receiver))
  checks.push(await feedCheck(cluster, followers, workload.merchants[0]!.apiKey))
  for (const f of followers) await f.stop()
  checks.push(await walletCheck(node, wallets, database.url!))
  checks.push(await logCheck(cluster))
  checks.push(serverErrorCheck(workload.traffic.sent, answers, faults))
  return checks
}

// a run that hangs (a node that never answers, a wait with no end) still ends, with its clean-up
const watchdog = setTimeout(() => {
  log(`chaos: still running ${durationS + 600} s after the start: giving up`)
  cluster?.killAll()
  void Promise.resolve(database?.drop()).finally(() => process.exit(2))
}, (durationS + 600) * 1000)
watchdog.unref()

const started = Date.now()
let exitCode = 2
try {
  const checks = await run()
  printChecks(checks)
  const failed = checks.filter((c) => !passed(c)).length
  exitCode = failed === 0 ? 0 : 1
  log(`chaos: ${failed === 0 ? "PASS" : `FAIL (${failed} of ${checks.length} checks)`} in ${((Date.now() - started) / 1000).toFixed(0)} s, seed ${seed}`)
} catch (error) {
  log(`chaos: the run failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
} finally {
  await cleanUp()
  saveOutputs()
}
process.exit(exitCode)
