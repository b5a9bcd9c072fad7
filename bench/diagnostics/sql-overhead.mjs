/**
 * bench/diagnostics/sql-overhead: CPU time per SQL statement of @effect/sql-pg (the service's database
 * client) beside plain `pg`, on the same trivial statements, one connection, no concurrency:
 * what each of the /buy transaction's round trips costs the Node process before PostgreSQL does
 * anything.
 *
 *   node bench/diagnostics/sql-overhead.mjs [--transactions 2000]
 *
 * Each transaction: BEGIN, 13 x `SELECT $1::int AS n, $2::text AS s`, COMMIT (the /buy transaction
 * has 13 statements between BEGIN and COMMIT), run back to back; CPU time of this process
 * (process.cpuUsage) per statement, and wall time per transaction. Alternates pg / Effect twice.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, ManagedRuntime, Redacted } from "effect"
import pg from "pg"
import { argOptions, log, PG_SERVER_URL, round } from "../lib/harness.mjs"

const opts = argOptions(process.argv.slice(2), { transactions: 2000 })
const STATEMENTS = 13

const measure = async (label, runTx) => {
  for (let i = 0; i < 200; i++) await runTx(i) // warm-up
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < opts.transactions; i++) await runTx(i)
  const wall = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  const statements = opts.transactions * (STATEMENTS + 2)
  const r = { label, cpuUsPerStatement: (cpu.user + cpu.system) / statements, wallMsPerTx: wall / opts.transactions }
  log(`  ${label.padEnd(16)} ${String(round(r.cpuUsPerStatement, 1)).padStart(7)} µs CPU per statement   ${round(r.wallMsPerTx, 2)} ms wall per transaction`)
  return r
}

const main = async () => {
  const client = new pg.Client({ connectionString: PG_SERVER_URL })
  await client.connect()
  const pgTx = async (i) => {
    await client.query("BEGIN")
    for (let k = 0; k < STATEMENTS; k++) await client.query("SELECT $1::int AS n, $2::text AS s", [i + k, "x"])
    await client.query("COMMIT")
  }

  const layer = PgClient.layer({ url: Redacted.make(PG_SERVER_URL), maxConnections: 1 })
  // a long-lived runtime holding the pool
  const runtime = ManagedRuntime.make(layer)
  const effectTx = (i) =>
    runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(Effect.gen(function*() {
        for (let k = 0; k < STATEMENTS; k++) yield* sql`SELECT ${i + k}::int AS n, ${"x"}::text AS s`
      }))
    }))
  // one Effect program running all transactions (no runPromise per transaction), as a request handler would
  const effectLoop = (n) =>
    runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (let i = 0; i < n; i++) {
        yield* sql.withTransaction(Effect.gen(function*() {
          for (let k = 0; k < STATEMENTS; k++) yield* sql`SELECT ${i + k}::int AS n, ${"x"}::text AS s`
        }))
      }
    }))

  log(`sql-overhead: ${opts.transactions} transactions of BEGIN + ${STATEMENTS} statements + COMMIT, sequential, one connection`)
  const results = []
  for (let round_ = 0; round_ < 2; round_++) {
    results.push(await measure("pg", pgTx))
    results.push(await measure("@effect/sql-pg", effectTx))
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    await effectLoop(opts.transactions)
    const cpu = process.cpuUsage(cpu0)
    const statements = opts.transactions * (STATEMENTS + 2)
    log(
      `  ${"@effect (1 fiber)".padEnd(16)} ${String(round((cpu.user + cpu.system) / statements, 1)).padStart(7)} µs CPU per statement   ${
        round((performance.now() - t0) / opts.transactions, 2)
      } ms wall per transaction`
    )
  }
  await client.end()
  await runtime.dispose()
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
