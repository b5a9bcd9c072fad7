/**
 * bench/stream's feed under test, set up for a scenario: the service (on the scenario's fresh
 * database, SIM_CATALOGUE_SIZE=--catalogue, with the source's churn), this script's connections
 * (queries, and a LISTEN whose notifications time each transaction's commit), a merchant, the full
 * dump's cursor and epoch to start the clients from, and with --source external the writer
 * (writer.mjs) writing the changes. What it opens goes into `s`, the scenario's state.
 */
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { connectClient, forkReady, fundedMerchant, log, rpc, startService } from "../lib/harness.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
export const STREAM_PATH = "/api/v1/merchant/items/stream"

export const startFeed = async (opts, s, dir, N, rate) => {
  const profileDir = join(dir, `profile-${N}x${rate}`)
  if (opts.profile) mkdirSync(profileDir, { recursive: true })
  s.service = await startService({
    databaseUrl: s.db.url,
    dataDir: join(dir, `data-${N}x${rate}`),
    nodeArgs: [...opts.nodeArgs.split(/\s+/).filter(Boolean), ...(opts.profile ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [])],
    ...(opts.entry === "" ? {} : { entry: resolve(opts.entry) }),
    extra: { SIM_CATALOGUE_SIZE: String(opts.catalogue), SIM_CHURN_PER_SECOND: String(opts.source === "sim" ? rate : 0) }
  })
  s.dbClient = await connectClient(s.db.url)
  // pg_notify reaches listeners at commit: its arrival time is the commit time of its changes
  s.listener = await connectClient(s.db.url)
  s.listener.on("notification", (n) => s.notified.push([Number(n.payload), performance.timeOrigin + performance.now()]))
  await s.listener.query("LISTEN catalogue_changes")
  const merchant = await fundedMerchant(s.service, "bench-stream", 10)
  const auth = { authorization: `Bearer ${merchant.api_key}` }
  const dump = await fetch(`${s.service.baseUrl}/api/v1/merchant/items/full-dump`, { headers: auth })
  if (dump.status !== 200) throw new Error(`full dump: ${dump.status} ${await dump.text()}`)
  await dump.body?.cancel()
  const cursor = Number(dump.headers.get("x-catalog-cursor"))
  const epoch = Number(dump.headers.get("x-catalog-epoch"))
  log(`service ready; dump cursor ${cursor} epoch ${epoch}`)
  if (opts.source === "external") {
    s.writer = (await forkReady(join(HERE, "writer.mjs"), [], { ...process.env, DATABASE_URL: s.db.url, RATE: String(rate) }, "writer")).proc
    s.writer.call = rpc(s.writer)
    await s.writer.call({ cmd: "start" })
    log(`  external writer: ${rate} changes/s into the change log`)
  }
  return { auth, cursor, epoch, profileDir }
}
