/**
 * The PostgreSQL server the benchmarks measure on (BENCH_PG_URL): connections, a fresh database per
 * run (dropped at the end or on an interrupt), the CPU time of a database's backends, and holding
 * the purchase worker off new purchases.
 */
import pg from "pg"
import { sleep } from "./basics.mjs"
import { atInterrupt } from "./children.mjs"
import { cpuMs } from "./cpu.mjs"

export const PG_SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

/** A connected pg.Client; retries while the shared server is out of connections (53300). */
export const connectClient = async (connectionString, tries = 40) => {
  for (let i = 0;; i++) {
    const client = new pg.Client({ connectionString })
    client.on("error", () => undefined)
    try {
      await client.connect()
      return client
    } catch (e) {
      if (e.code !== "53300" || i >= tries) throw e
      await sleep(500)
    }
  }
}

export const withAdminClient = async (f) => {
  const client = await connectClient(PG_SERVER_URL)
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

export const createDatabase = async (prefix) => {
  const name = `${prefix}_${process.pid}`
  await withAdminClient((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => c.query(`CREATE DATABASE ${name}`)))
  const url = new URL(PG_SERVER_URL)
  url.pathname = `/${name}`
  const drop = () => withAdminClient((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  atInterrupt(async () => {
    await sleep(300)
    await drop()
  })
  return { name, url: url.toString(), drop }
}

/**
 * CPU ms of the PostgreSQL backends serving `database` (pids from pg_stat_activity), as a map
 * pid -> ms; `pgCpuDelta(a, b)` sums the growth of each backend present at the end (a backend new
 * since `a` counts from 0). The PostgreSQL server is shared: other databases' backends are left out.
 */
export const pgBackendCpu = async (database, application) => {
  const pids = await withAdminClient((c) =>
    c.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()
     ${application ? "AND application_name = $2" : ""}`,
      application ? [database, application] : [database]
    )
  )
    .then((r) => r.rows.map((row) => row.pid))
  return new Map(pids.map((pid) => [pid, cpuMs(pid)]).filter(([, ms]) => !Number.isNaN(ms)))
}
export const pgCpuDelta = (a, b) => {
  let total = 0
  for (const [pid, ms] of b) total += ms - (a.get(pid) ?? 0)
  return total
}

/**
 * Holds the purchase worker off new purchases (a trigger sets each one's next_step_at a day ahead),
 * to measure the /buy path without the worker's share of the machine.
 */
export const deferPurchaseWorker = async (client) => {
  await client.query(`CREATE FUNCTION bench_defer_worker() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN NEW.next_step_at := now() + interval '1 day'; RETURN NEW; END $$`)
  await client.query(`CREATE TRIGGER bench_defer_worker BEFORE INSERT ON purchases FOR EACH ROW EXECUTE FUNCTION bench_defer_worker()`)
}
