/**
 * bench/purchases bare baseline: the /buy transaction of the service as plain `pg` calls
 * (bare-buy.mjs: the service's statements, in its order, in its 2 round trips), N concurrent
 * workers on a Pool of N, on its own copy of the data (a database cloned from the service's, so
 * the same merchants, balances and items). The work the service does after the commit (logging
 * the reservation, the purchase worker) is not part of the baseline.
 *
 * Forked by run.mjs (DATABASE_URL in the environment), driven over IPC:
 *   init {merchantIds, tradeUrl, steamId, items: [id...]}   (worker i buys for merchantIds[i mod M])
 *   run {concurrency, warmup, duration, prefix}  -> {measured: {count, seconds, latencies...}}
 *     posts {measuring: true} when the measured window starts, {windowEnd: true} when it ends.
 */
import pg from "pg"
import { buy, statementsReady } from "./bare-buy.mjs"

const now = () => performance.now()

let state

const run = async ({ concurrency, poolMax = concurrency, warmup, duration, prefix }) => {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: poolMax })
  pool.on("error", () => undefined)
  // open the connections before the clock starts, as the service's pool is warm; the PostgreSQL
  // server is shared: if it runs out of connections, go on with those opened
  const opened = []
  for (let i = 0; i < poolMax; i++) {
    try {
      opened.push(await pool.connect())
    } catch (e) {
      if (e.code !== "53300" || opened.length === 0) throw e
      break
    }
  }
  opened.forEach((c) => c.release())
  if (opened.length < poolMax) {
    await pool.end()
    return run({ concurrency, poolMax: opened.length, warmup, duration, prefix })
  }
  let measuring = false
  let stop = false
  const latencies = []
  let count = 0
  let errors = 0
  const errorKinds = {}
  let seq = 0
  const worker = async (w) => {
    const merchantId = state.merchantIds[w % state.merchantIds.length]
    while (!stop) {
      if (state.next >= state.items.length) throw new Error(`bare: out of items after ${state.next}`)
      const itemId = state.items[state.next++]
      const customId = `${prefix}-${seq++}`
      const t0 = now()
      try {
        await buy(pool, { merchantId, itemId, customId, tradeUrl: state.tradeUrl, steamId: state.steamId, maxPriceCents: 1e12 })
        if (measuring && !stop) {
          latencies.push(now() - t0)
          count++
        }
      } catch (e) {
        if (measuring && !stop) {
          errors++
          errorKinds[e.message] = (errorKinds[e.message] ?? 0) + 1
        }
      }
    }
  }
  const workers = Array.from({ length: concurrency }, (_, w) => worker(w))
  await new Promise((r) => setTimeout(r, warmup * 1000))
  measuring = true
  process.send({ measuring: true })
  const cpu0 = process.cpuUsage()
  const t0 = now()
  await new Promise((r) => setTimeout(r, duration * 1000))
  const seconds = (now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  stop = true
  measuring = false
  process.send({ windowEnd: true })
  await Promise.all(workers)
  // the runner reads our PostgreSQL backends' CPU time at the window's end: keep them a moment
  await new Promise((r) => setTimeout(r, 1000))
  await pool.end()
  return { count, errors, errorKinds, seconds, latencies, poolMax, cpuMs: (cpu.user + cpu.system) / 1000 }
}

process.on("message", async (msg) => {
  try {
    if (msg.cmd === "init") {
      state = { merchantIds: msg.merchantIds, tradeUrl: msg.tradeUrl, steamId: msg.steamId, items: msg.items, next: 0 }
      await statementsReady()
      process.send({ replyTo: msg.id })
    } else if (msg.cmd === "run") {
      process.send({ replyTo: msg.id, ...(await run(msg)), used: state.next })
    }
  } catch (e) {
    process.send({ replyTo: msg.id, error: String(e?.stack ?? e) })
  }
})
process.send({ ready: true })
