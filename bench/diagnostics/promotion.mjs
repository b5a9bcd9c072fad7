/**
 * bench/diagnostics/promotion: how much does each young-generation collection of the service
 * promote, and how long does it pause the process, under one kind of request at a time?
 *
 *   node bench/diagnostics/promotion.mjs [--phases balance,buy] [--seconds 8] [--catalogue 100000]
 *                                        [--worker deferred|on] [--entry path/to/main.mjs]
 *
 * One service (the build, or --entry: another revision's, e.g. from build-revision.sh) on a fresh
 * database, with V8's per-collection record (gc-trace-preload.mjs); 16 funded merchants and 16
 * keep-alive clients (bench/lib/http-connection.mjs), each phase for --seconds: `balance` (GET
 * /balance), `buy` (POST /buy, every request a distinct item and custom_id), `search` (GET
 * /items/search), `idle`. Printed per phase: requests/s, the young collections in the window, their
 * mean pause, the bytes each promoted (copied to the old generation: objects that survived two),
 * and per request the bytes promoted, surviving and allocated.
 *
 * Objects that outlive their request only because something in the old generation still points at
 * them are promoted with it, and copying them is most of a young collection's pause: this is how
 * the fast lane's request objects (Http.ts's Set of open responses, RequestBody.ts's `push` set on
 * each request) and Effect's Set of root fibers were found (bench/RESULTS-archive.md).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { argOptions, buildIfNeeded, log, sleep, startBuyService } from "../lib/harness.mjs"
import { openConnection } from "../lib/http-connection.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const TRADE_URL = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
const CLIENTS = 16

const opts = argOptions(process.argv.slice(2), { phases: "balance,buy", seconds: 8, catalogue: 100000, worker: "deferred", entry: "" })
const phases = opts.phases.split(",")
if (opts.entry === "") buildIfNeeded()
const traceDir = mkdtempSync(join(tmpdir(), "promotion-"))
process.env.GC_TRACE = join(traceDir, "gc")
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --import ${join(HERE, "gc-trace-preload.mjs")}`.trim()

const { db, itemIds, merchants, service } = await startBuyService({
  name: "mps_promotion",
  dataDir: join(traceDir, "data"),
  catalogue: opts.catalogue,
  worker: opts.worker,
  merchants: CLIENTS,
  entry: opts.entry
})

const url = new URL(service.baseUrl)
let nextItem = 0
let seq = 0
const request = (connection, phase, headers) => {
  switch (phase) {
    case "balance":
      return connection.request("GET", "/api/v1/merchant/balance", headers)
    case "search":
      return connection.request("GET", "/api/v1/merchant/items/search?market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)&limit=10", headers)
    case "buy": {
      if (nextItem >= itemIds.length) throw new Error(`out of items after ${nextItem}: raise --catalogue`)
      const body = { item_id: itemIds[nextItem++], max_price: 100000000, custom_id: `promotion-${seq++}`, target_trade_url: TRADE_URL }
      return connection.request("POST", "/api/v1/merchant/buy", { ...headers, "content-type": "application/json" }, JSON.stringify(body))
    }
    default:
      throw new Error(`unknown phase ${phase}`)
  }
}
const windows = []
for (const phase of phases) {
  const connections = await Promise.all(Array.from({ length: CLIENTS }, () => openConnection(url.hostname, Number(url.port))))
  let stop = false
  let count = 0
  const statuses = {}
  const client = async (i) => {
    const headers = { authorization: `Bearer ${merchants[i].api_key}` }
    while (!stop) {
      if (phase === "idle") {
        await sleep(100)
        continue
      }
      const res = await request(connections[i], phase, headers)
      statuses[res.status] = (statuses[res.status] ?? 0) + 1
      count++
    }
  }
  const from = Date.now()
  const running = connections.map((_, i) => client(i))
  await sleep(opts.seconds * 1000)
  stop = true
  await Promise.all(running)
  connections.forEach((connection) => connection.close())
  windows.push({ phase, from, to: Date.now(), count, statuses })
  await sleep(1500)
}
const pid = service.child.pid
await service.stop()
await db.drop()

const origin = Number(readFileSync(`${process.env.GC_TRACE}.${pid}.origin`, "utf8"))
const text = readFileSync(readdirSync(traceDir).map((f) => join(traceDir, f)).find((f) => f.endsWith(`gc.${pid}`)), "utf8")
const collections = text.split(/\[\d+:0x[0-9a-f]+\]/).slice(1).map((record) => {
  const field = Object.fromEntries([...record.matchAll(/(\w[\w.]*)=([^\s]+)/g)].map((m) => [m[1], m[2]]))
  return {
    at: origin + Number(record.match(/^\s*(\d+)\s*ms:/)?.[1]),
    kind: field.gc,
    pause: Number(field.pause),
    promoted: Number(field.promoted ?? 0),
    survived: Number(field.new_space_survived ?? 0),
    allocated: Number(field.allocated ?? 0)
  }
})
rmSync(traceDir, { recursive: true, force: true })

log(`service ${opts.entry || "(this build)"}, ${opts.catalogue} items, worker ${opts.worker}, ${CLIENTS} clients, ${opts.seconds} s a phase`)
for (const w of windows) {
  const young = collections.filter((c) => c.kind === "s" && c.at >= w.from && c.at <= w.to)
  const sum = (key) => young.reduce((s, c) => s + c[key], 0)
  const perRequest = (key) => w.count === 0 ? "-" : (sum(key) / w.count / 1024).toFixed(2)
  const full = collections.filter((c) => c.kind !== "s" && c.at >= w.from && c.at <= w.to).length
  log(
    `${w.phase.padEnd(8)} ${Math.round(w.count / opts.seconds)} req/s ${JSON.stringify(w.statuses)}; ${young.length} young collections` +
      (young.length === 0
        ? ""
        : `, mean pause ${(sum("pause") / young.length).toFixed(1)} ms, ${(sum("promoted") / young.length / 1e6).toFixed(2)} MB promoted each`) +
      `; per request: promoted ${perRequest("promoted")} KB, survived ${perRequest("survived")} KB, allocated ${perRequest("allocated")} KB` +
      (full > 0 ? `; ${full} full collection(s)` : "")
  )
}
process.exit(0)
