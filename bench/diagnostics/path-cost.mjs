/**
 * bench/diagnostics/path-cost: the service's CPU per request on each leg of POST /buy, to tell the
 * HTTP path from the SQL: a 400 (the HttpApi path and validation, no SQL), a 404 (BEGIN, the
 * idempotency record, the item lookup, ROLLBACK), a 201 with the worker on, and a 201 with the
 * worker held off (a trigger dates new purchases a day ahead); GET /balance (fast lane) and
 * GET /purchases (HttpApi, one query) for reference. 8 connections, 8 s each, on a fresh
 * database of BENCH_PG_URL's server with SIM_CATALOGUE_SIZE=20000.
 *
 *   node bench/diagnostics/path-cost.mjs
 */
import autocannon from "autocannon"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { cpuMs, createDatabase, fundedMerchant, startService } from "../lib/harness.mjs"
const db = await createDatabase("mps_bench_pathcost")
const service = await startService({
  databaseUrl: db.url,
  dataDir: mkdtempSync(join(tmpdir(), "mps-pathcost-")),
  extra: { SIM_CATALOGUE_SIZE: "20000", SIM_TIME_SCALE: "100" },
  untilIdle: true
})
const m = await fundedMerchant(service, "path-cost", 2_000_000)
const dbc = new pg.Client({ connectionString: db.url })
await dbc.connect()
const itemIds = (await dbc.query("SELECT id FROM catalogue_items WHERE status = 'active' ORDER BY random()")).rows.map((r) => r.id)
let nextItem = 0
const key = m.api_key ?? m.apiKey
const url = (p) => `${service.baseUrl}/api/v1/merchant${p}`
const bodyOf = (fields) =>
  JSON.stringify({
    item_id: "3f1c2b9a-8d7e-4c6b-9a5f-0e1d2c3b4a59",
    max_price: 10,
    custom_id: "c1",
    target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH",
    ...fields
  })
const run = async (label, opts) => {
  const c0 = cpuMs(service.child.pid)
  const r = await autocannon({ connections: 8, duration: 8, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, ...opts })
  const cpu = cpuMs(service.child.pid) - c0
  const n = r.requests.total
  console.log(
    label.padEnd(40),
    String(Math.round(r.requests.average)).padStart(6),
    "req/s",
    String(Math.round((cpu * 1000) / n)).padStart(6),
    "µs CPU/request",
    JSON.stringify(r.statusCodeStats ?? {})
  )
}
await run("GET /balance (fast lane)", { url: url("/balance") })
await run("POST /buy 400 (bad trade url)", { url: url("/buy"), method: "POST", body: bodyOf({ target_trade_url: "nope" }) })
await run("POST /buy 404 (unknown item)", { url: url("/buy"), method: "POST", body: bodyOf({}) })
await run("GET /purchases (HttpApi, 1 query)", { url: url("/purchases?limit=1") })
// each request a distinct item and custom_id
const buying = () => ({
  url: url("/buy"),
  method: "POST",
  requests: [{ setupRequest: (req) => ({ ...req, body: bodyOf({ item_id: itemIds[nextItem], custom_id: `mb-${nextItem++}`, max_price: 100000 }) }) }]
})
await run("POST /buy 201, worker on", buying())
await dbc.query(`CREATE FUNCTION mb_defer() RETURNS trigger AS $$ BEGIN NEW.next_step_at := now() + interval '1 day'; RETURN NEW; END $$ LANGUAGE plpgsql`)
await dbc.query("CREATE TRIGGER mb_defer BEFORE INSERT ON purchases FOR EACH ROW EXECUTE FUNCTION mb_defer()")
await new Promise((resolve) => setTimeout(resolve, 3000))
await run("POST /buy 201, worker deferred", buying())
await dbc.end()
await service.stop()
await db.drop()
