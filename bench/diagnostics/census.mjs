/**
 * bench/diagnostics/census: which SQL statements the service runs per /buy, and how long each took
 * inside PostgreSQL (not the round trip), from PostgreSQL's own statement log.
 *
 *   node bench/diagnostics/census.mjs [--buys 50] [--concurrency 1] [--timeScale 100] [--log /var/log/postgresql/postgresql-15-main.log]
 *
 * Sets log_min_duration_statement = 0 on a fresh database only (ALTER DATABASE, so nothing else on
 * the server is logged), starts the service on it, makes --buys buys at --concurrency, and counts
 * the `execute` entries of that database in the server log (readable server log required), per
 * buy, by statement text; then the same over 5 idle seconds after. Also prints, for one buy, the
 * timeline of its transaction's statements (the gaps between them are time spent outside
 * PostgreSQL: in the service, or waiting for a CPU).
 */
import { readFileSync, statSync } from "node:fs"
import pg from "pg"
import { admin, argOptions, createDatabase, log, round, sleep, startService, withAdminClient } from "../lib/harness.mjs"

const opts = argOptions(process.argv.slice(2), {
  buys: 50,
  concurrency: 1,
  timeScale: 100,
  log: "/var/log/postgresql/postgresql-15-main.log",
  worker: "on"
})
const TRADE_URL = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"

const main = async () => {
  try {
    statSync(opts.log)
  } catch {
    throw new Error(`the PostgreSQL server log ${opts.log} is not readable: pass --log`)
  }
  const db = await createDatabase("mps_census")
  let svc
  try {
    await withAdminClient((c) => c.query(`ALTER DATABASE ${db.name} SET log_min_duration_statement = 0`))
    svc = await startService({
      databaseUrl: db.url,
      dataDir: `/tmp/${db.name}`,
      extra: { SIM_CATALOGUE_SIZE: "5000", SIM_CHURN_PER_SECOND: "0", SIM_TIME_SCALE: String(opts.timeScale) }
    })
    const m = await admin(svc, "/admin/merchants", { name: "census", webhook_url: null })
    await admin(svc, "/admin/deposits", { merchant_id: m.merchant_id, network: "tron", amount: 100_000_000, tx_id: "census-1" })
    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    if (opts.worker === "deferred") {
      await c.query(`CREATE FUNCTION bench_defer_worker() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.next_step_at := now() + interval '1 day'; RETURN NEW; END $$`)
      await c.query(`CREATE TRIGGER bench_defer_worker BEFORE INSERT ON purchases FOR EACH ROW EXECUTE FUNCTION bench_defer_worker()`)
    }
    const ids = (await c.query(`SELECT id FROM catalogue_items WHERE status = 'active' LIMIT ${opts.buys}`)).rows.map((r) => r.id)
    await c.end()
    await sleep(3000)
    const mark = () => statSync(opts.log).size
    const phases = []
    let from = mark()
    const t0 = performance.now()
    let next = 0
    await Promise.all(Array.from({ length: opts.concurrency }, async () => {
      while (next < ids.length) {
        const i = next++
        const r = await fetch(`${svc.baseUrl}/api/v1/merchant/buy`, {
          method: "POST",
          headers: { authorization: `Bearer ${m.api_key}`, "content-type": "application/json" },
          body: JSON.stringify({ item_id: ids[i], max_price: 1e8, custom_id: `census-${i}`, target_trade_url: TRADE_URL })
        })
        await r.text()
        if (r.status !== 201) log(`  buy ${i}: ${r.status}`)
      }
    }))
    const ms = performance.now() - t0
    await sleep(1500) // the worker's steps that follow the last buys
    phases.push([`${ids.length} buys at concurrency ${opts.concurrency} (+1.5 s)`, from, mark(), ids.length])
    from = mark()
    await sleep(5000)
    phases.push(["5 idle seconds after", from, mark(), 0])
    log(`${ids.length} buys in ${round(ms)} ms (worker ${opts.worker}, SIM_TIME_SCALE=${opts.timeScale})`)

    const text = readFileSync(opts.log)
    for (const [name, a, b, buys] of phases) {
      const records = text.subarray(a, b).toString().split(/\n(?=\d{4}-\d\d-\d\d )/).filter((l) => l.includes(`@${db.name} `) && l.includes("duration:"))
      const counts = new Map()
      let total = 0
      let totalMs = 0
      const timeline = []
      for (const l of records) {
        const m = l.match(/^(\S+ \S+) \S+ \[(\d+)\].*duration: ([\d.]+) ms\s+(statement|execute [^:]*|parse [^:]*|bind [^:]*): ([\s\S]*)$/)
        if (!m || m[4].startsWith("parse") || m[4].startsWith("bind")) continue
        const key = m[5].replace(/\s+/g, " ").trim().slice(0, 100)
        const e = counts.get(key) ?? { n: 0, ms: 0 }
        e.n++
        e.ms += Number(m[3])
        counts.set(key, e)
        total++
        totalMs += Number(m[3])
        timeline.push({ at: m[1], pid: m[2], ms: Number(m[3]), key })
      }
      log(`\n== ${name}: ${total} statements${buys ? `, ${round(total / buys, 1)} per buy` : ""}; ${round(totalMs, 1)} ms inside PostgreSQL`)
      log(`  count${buys ? "  /buy" : ""}  total ms  statement`)
      for (const [k, v] of [...counts].sort((x, y) => y[1].n - x[1].n)) {
        log(`  ${String(v.n).padStart(5)}${buys ? `  ${String(round(v.n / buys, 2)).padStart(4)}` : ""}  ${String(round(v.ms, 1)).padStart(8)}  ${k}`)
      }
      if (buys) {
        const i = timeline.findIndex((t, k) => k > timeline.length / 2 && t.key.startsWith("INSERT INTO purchase_requests"))
        if (i > 0) {
          const pid = timeline[i].pid
          const tx = []
          let start = i
          for (let k = i - 1; k >= 0 && k > i - 50; k--) {
            if (timeline[k].pid === pid && timeline[k].key === "BEGIN") {
              start = k
              break
            }
          }
          for (let k = start; k < timeline.length && tx.length < 40; k++) {
            if (timeline[k].pid !== pid) continue
            tx.push(timeline[k])
            if (timeline[k].key === "COMMIT") break
          }
          log(`\n  one /buy transaction (backend ${pid}): log time (statement end), ms inside PostgreSQL, statement`)
          for (const t of tx) log(`    ${t.at.slice(11)}  ${String(t.ms).padStart(7)}  ${t.key.slice(0, 80)}`)
        }
      }
    }
  } finally {
    if (svc) await svc.stop()
    await sleep(300)
    await db.drop()
  }
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
