/**
 * bench/diagnostics/churn-cost: what catalogue churn costs the fast lane's list and search answers,
 * which are built once per query and index version (src/Catalogue/Http.ts): service CPU per
 * request and requests per second for a filtered /items page and a search, with the simulator's
 * churn off and at --churn changes per second (each one empties the page cache), 50 connections,
 * --seconds each, on a fresh database of BENCH_PG_URL's server with SIM_CATALOGUE_SIZE=--size.
 *
 *   node bench/diagnostics/churn-cost.mjs [--size 100000] [--churn 50] [--seconds 10]
 */
import autocannon from "autocannon"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { argOptions, cpuMs, createDatabase, fundedMerchant, sleep, startService } from "../lib/harness.mjs"

const opts = argOptions(process.argv.slice(2), { size: 100000, churn: 50, seconds: 10 })
const PATHS = {
  items: "/items?category=rifle&exterior=Field-Tested&min_price=5&max_price=50&delivery_type=instant&limit=50",
  search: "/items/search?market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)&max_price=500&limit=10"
}

const measure = async (churn) => {
  const db = await createDatabase("mps_bench_churn")
  const service = await startService({
    databaseUrl: db.url,
    dataDir: mkdtempSync(join(tmpdir(), "mps-churn-")),
    extra: { SIM_CATALOGUE_SIZE: String(opts.size), SIM_CHURN_PER_SECOND: String(churn), DUMP_INTERVAL_SECONDS: "3600" },
    untilIdle: true
  })
  try {
    // the initial sync has written every item: wait until the service is quiet but for its churn
    await sleep(2000)
    const m = await fundedMerchant(service, `churn-${churn}`, 10)
    const key = m.api_key ?? m.apiKey
    for (const [name, path] of Object.entries(PATHS)) {
      const url = `${service.baseUrl}/api/v1/merchant${path}`
      await autocannon({ url, connections: 50, duration: 2, headers: { authorization: `Bearer ${key}` } })
      const c0 = cpuMs(service.child.pid)
      const r = await autocannon({ url, connections: 50, duration: Number(opts.seconds), headers: { authorization: `Bearer ${key}` } })
      const cpu = cpuMs(service.child.pid) - c0
      console.log(
        `churn ${String(churn).padStart(3)}/s  ${name.padEnd(6)} ${String(Math.round(r.requests.average)).padStart(6)} req/s  p99 ${r.latency.p99} ms  ${
          Math.round((cpu * 1000) / r.requests.total)
        } µs CPU/request  ${JSON.stringify(r.statusCodeStats)}`
      )
    }
  } finally {
    await service.stop()
    await db.drop()
  }
}

for (const churn of [0, Number(opts.churn)]) await measure(churn)
