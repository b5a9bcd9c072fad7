/**
 * bench/purchases' setup: the data (the service's synthetic catalogue in a fresh database, merchants
 * funded above the whole catalogue), then the bares' copies of that database (CREATE DATABASE ...
 * TEMPLATE: the same merchants, balances and items, nothing shared with the service but the
 * PostgreSQL server) and the bares forked and initialised on them.
 */
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { admin, connectClient, deferPurchaseWorker, forkReady, log, round, rpc, startService, withAdminClient } from "../lib/harness.mjs"
import { TRADE_URL } from "./load.mjs"
import { activitySampler } from "./postgres-activity.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const STEAM_ID = String(76561197960265728n + 12345678n)

/** Starts the service on `db` until ready and idle (a restart on a populated database reconciles at first). */
export const startBuyService = (opts, db, dataDir, nodeArgs = []) =>
  startService({
    databaseUrl: db.url,
    dataDir,
    extra: { SIM_CATALOGUE_SIZE: String(opts.catalogue), SIM_CHURN_PER_SECOND: "0", SIM_TIME_SCALE: String(opts.timeScale) },
    nodeArgs,
    readyTimeoutMs: 600_000,
    untilIdle: true
  })

/** The catalogue (a first start fills it), the active items' ids and --merchants funded merchants; the service is stopped after. */
export const prepareData = async (opts, db, dataDir) => {
  const t0 = performance.now()
  const service = await startBuyService(opts, db, dataDir)
  log(`service ready with ${opts.catalogue} items in ${round((performance.now() - t0) / 1000, 1)} s`)
  const dbc = await connectClient(db.url)
  const total = Number((await dbc.query("SELECT sum(price_cents) AS s FROM catalogue_items WHERE status = 'active'")).rows[0].s) / 100
  const ids = (await dbc.query("SELECT id FROM catalogue_items WHERE status = 'active' ORDER BY id")).rows.map((r) => r.id)
  await dbc.end()
  const merchants = []
  for (let m = 0; m < opts.merchants; m++) {
    const merchant = await admin(service, "/admin/merchants", { name: `bench-buyer-${m}`, webhook_url: null })
    // deposits pay a 0.5 % commission above 5000 USD: fund 10 % above the whole catalogue
    let left = Math.ceil(total * 1.1)
    for (let n = 0; left > 0; n++) {
      const amount = Math.min(left, 100_000_000)
      await admin(service, "/admin/deposits", { merchant_id: merchant.merchant_id, network: "tron", amount, tx_id: `bench-buy-${m}-${n}` })
      left -= amount
    }
    merchants.push(merchant)
  }
  log(`${ids.length} active items worth ${round(total)} USD; ${merchants.length} merchant(s) funded with ${Math.ceil(total * 1.1)} USD each`)
  await service.stop()
  if (opts.worker === "deferred") {
    const c = await connectClient(db.url)
    await deferPurchaseWorker(c)
    await c.end()
    log("worker deferred: new purchases are due in a day (trigger in both databases)")
  }
  return { ids, merchants }
}

/** A copy of `db` named `name` (dropped first if an earlier run left it): its URL. */
export const copyOf = async (db, name) => {
  await withAdminClient((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => c.query(`CREATE DATABASE ${name} TEMPLATE ${db.name}`)))
  const url = new URL(db.url)
  url.pathname = `/${name}`
  return url.toString()
}

const forkBare = async (module, url, label) =>
  (await forkReady(join(HERE, module), [], { ...process.env, NODE_ENV: "production", DATABASE_URL: url }, label)).proc

/**
 * The bare (bare.mjs) on its copy, and with `bareHttp` the bare behind HTTP (bare-http.mjs) on its
 * own, each initialised with the merchants and items and with an activity sampler of its database;
 * into `ctx`, which the measurements read.
 */
export const startBares = async (ctx, { ids, merchants, bare, bareHttp }) => {
  ctx.bare = await forkBare("bare.mjs", bare.url, "bare")
  ctx.bareCall = rpc(ctx.bare)
  await ctx.bareCall({ cmd: "init", merchantIds: merchants.map((m) => m.merchant_id), tradeUrl: TRADE_URL, steamId: STEAM_ID, items: ids })
  ctx.bareDbName = bare.name
  ctx.bareSampler = await activitySampler(bare.name)
  if (bareHttp !== undefined) {
    const proc = await forkBare("bare-http.mjs", bareHttp.url, "bare-http")
    ctx.bareHttpCall = rpc(proc)
    const { port } = await ctx.bareHttpCall({ cmd: "init", keys: Object.fromEntries(merchants.map((m) => [m.api_key, m.merchant_id])), steamId: STEAM_ID })
    ctx.bareHttp = { process: proc, baseUrl: `http://127.0.0.1:${port}` }
    ctx.bareHttpItems = { ids, next: 0 }
    ctx.bareHttpDbName = bareHttp.name
    ctx.bareHttpSampler = await activitySampler(bareHttp.name)
  }
}
