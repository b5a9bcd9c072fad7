/**
 * bench/purchases: POST /api/v1/merchant/buy per second and latency at 1, 16 and 64 concurrent
 * clients on a real PostgreSQL, beside a bare `pg` script running the same transaction, in the
 * same run.
 *
 *   node bench/purchases/run.mjs [--levels 1,16,64] [--duration 15] [--warmup 3] [--rounds 2]
 *                                [--catalogue 100000] [--timeScale 100] [--merchants 1] [--profile]
 *
 * 1. A fresh database on BENCH_PG_URL's server; the built service with SIM_CATALOGUE_SIZE=--catalogue
 *    and no churn, and SIM_TIME_SCALE=--timeScale so that the purchase worker's later steps
 *    (acknowledgement, trade offer, decision) fall after the run; the worker still picks up every
 *    new purchase at once (created -> processing, the simulated provider's order: two
 *    transactions per buy), competing for the CPU as it would in production.
 *    --merchants merchants, each funded (POST /admin/deposits) with more than the whole catalogue.
 * 2. The service is stopped once and its database cloned (CREATE DATABASE ... TEMPLATE): the bare
 *    baseline (bench/purchases/bare.mjs, child process) works on that copy: the same merchants,
 *    balances and items, nothing shared with the service but the PostgreSQL server.
 * 3. For each level, --rounds rounds alternating (service, bare, bare, service, ...), each a
 *    --warmup then a --duration window. The service is loaded from this process over keep-alive
 *    HTTP connections (one per client, each client sending its next request when the last one
 *    answered; bench/lib/http-connection.mjs, a minimal client like autocannon's: node:http's
 *    own client cost about 0.5 ms of CPU per request here, in the measured latency); every
 *    request a distinct custom_id and item_id, max_price above any price, the trade URL
 *    https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH. The bare runs the
 *    same statements with a pg Pool of as many connections as clients.
 *    With --httpBare (the default; --no-httpBare leaves it out), a third variant in each round:
 *    bench/purchases/bare-http.mjs, the bare's transaction behind a minimal node:http server, on a
 *    third copy, loaded over HTTP exactly as the service is: what an HTTP hop alone costs the bare,
 *    so that the service's own cost (service / bare-http) is told from the hop's (bare-http / bare).
 * 4. Beside the figures: CPU time per buy of the server process (service or bare), the WAL
 *    written per buy (the whole server's), the cores used by the PostgreSQL backends of the
 *    database under test (the server is shared with other databases; its WAL writer and
 *    checkpointer are left out) and the machine, and what the PostgreSQL backends of the database
 *    under test were doing (pg_stat_activity sampled every 10 ms: executing, waiting for a lock,
 *    or idle in transaction = waiting for the client's next statement).
 * --worker deferred: a trigger (in both databases) sets each new purchase's next_step_at a day
 *    ahead, so the purchase worker leaves the new purchases alone during the run: the /buy path
 *    alone, to tell its cost from the worker's. Default `on`.
 * --merchants M: the clients (and the bare's workers) spread over M merchants (client i buys for
 *    merchant i mod M), to tell the per-merchant balance row's lock from the rest.
 * --profile: one more service run at --profileAt (16) clients under `node --cpu-prof`; a summary of the window
 *    is printed and the profile kept in bench/purchases/out/.
 *
 * The parts: the data and the bares (setup.mjs), the load on the service (load.mjs), one measured
 * run (measure.mjs, postgres-activity.mjs), the levels and the summary (levels.mjs), the profile
 * (profile.mjs).
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { argOptions, atInterrupt, buildIfNeeded, createDatabase, log, machineInfo, sleep, withAdminClient } from "../lib/harness.mjs"
import { measureLevel, summariseLevels } from "./levels.mjs"
import { activitySampler } from "./postgres-activity.mjs"
import { profileService } from "./profile.mjs"
import { copyOf, prepareData, startBares, startBuyService } from "./setup.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const OUT = join(HERE, "out")

const argv = process.argv.slice(2)
const opts = argOptions(argv, {
  levels: "1,16,64",
  duration: 15,
  warmup: 3,
  rounds: 2,
  catalogue: 100000,
  timeScale: 100,
  merchants: 1,
  worker: "on",
  httpBare: true,
  profile: false,
  profileAt: 16,
  quietBusy: 15,
  waitQuiet: 60
})
const levels = opts.levels.split(",").map(Number)

const main = async () => {
  const started = new Date()
  const stamp = started.toISOString().replace(/[:.]/g, "-")
  const info = await machineInfo()
  log(`bench/purchases ${started.toISOString()}`)
  log(`machine: ${info.nproc} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB, node ${info.node}, PostgreSQL ${info.postgres}; revision ${info.revision}`)
  log(`settings: ${JSON.stringify(opts)}`)
  buildIfNeeded()
  mkdirSync(OUT, { recursive: true })
  const dataDir = join(OUT, `data-${stamp}`)
  const results = { date: started.toISOString(), command: `node bench/purchases/run.mjs ${argv.join(" ")}`.trim(), machine: info, options: opts }

  const db = await createDatabase("mps_bench_buy")
  const bareDbName = `${db.name}_bare`
  const bareHttpDbName = `${db.name}_barehttp`
  const dropBare = () =>
    withAdminClient(async (c) => {
      for (const name of [bareDbName, bareHttpDbName]) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    })
  atInterrupt(async () => {
    await sleep(300)
    await dropBare()
  })
  const ctx = {}
  try {
    // 1. data; 2. the bares' copies, the service started again, the bares
    const { ids, merchants } = await prepareData(opts, db, dataDir)
    const bare = { name: bareDbName, url: await copyOf(db, bareDbName) }
    const bareHttp = opts.httpBare ? { name: bareHttpDbName, url: await copyOf(db, bareHttpDbName) } : undefined
    ctx.service = await startBuyService(opts, db, dataDir)
    ctx.merchants = merchants
    ctx.serviceItems = { ids, next: 0 }
    ctx.dbName = db.name
    ctx.serviceSampler = await activitySampler(db.name)
    await startBares(ctx, { ids, merchants, bare, bareHttp })
    const variants = opts.httpBare ? ["service", "bare", "bare-http"] : ["service", "bare"]

    // 3. load
    results.levels = []
    for (const c of levels) results.levels.push(await measureLevel(opts, ctx, variants, c))
    summariseLevels(opts, results)

    // 4. profile
    if (opts.profile) {
      await ctx.service.stop()
      results.profile = await profileService(opts, ctx, db, dataDir, join(OUT, `profile-${stamp}`))
    }
  } finally {
    if (ctx.bare) await ctx.bare.stop()
    if (ctx.bareHttp) await ctx.bareHttp.process.stop()
    if (ctx.service) await ctx.service.stop()
    await ctx.serviceSampler?.end().catch(() => undefined)
    await ctx.bareSampler?.end().catch(() => undefined)
    await ctx.bareHttpSampler?.end().catch(() => undefined)
    await sleep(300)
    await db.drop().catch((e) => log(`could not drop ${db.name}: ${e.message}`))
    await dropBare().catch((e) => log(`could not drop ${bareDbName} or ${bareHttpDbName}: ${e.message}`))
    rmSync(dataDir, { recursive: true, force: true })
  }
  const file = join(OUT, `results-${stamp}.json`)
  for (const l of results.levels ?? []) for (const rs of Object.values(l.runs)) for (const r of rs) delete r.latencies
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n")
  log(`\nresults: ${file}`)
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
