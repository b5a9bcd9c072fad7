/**
 * The database layer: a PostgreSQL server when DATABASE_URL is set, otherwise the embedded PGlite
 * in DATA_DIR/pg. Migrations are applied before the layer is ready.
 */
import { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { Settings } from "../Config.js"
import * as Pglite from "./Pglite.js"
import { migrate } from "./Migrations.js"

export const DatabaseKind = (settings: Settings) => Option.isSome(settings.databaseUrl) ? "postgresql" : "pglite"

/** One read on the pool, outside any transaction: its rows, as pg returns them. */
export type DirectRead = (text: string, values: ReadonlyArray<unknown>) => Promise<ReadonlyArray<unknown>>

/**
 * Plain reads straight on the PostgreSQL pool that SqlClient uses, for the fast lane's hot reads
 * (a statement through @effect/sql costs about 150 µs of CPU more). None on PGlite: its one
 * session belongs to SqlClient's transactions.
 */
export class DirectReads extends Context.Tag("DirectReads")<DirectReads, Option.Option<DirectRead>>() {}

/** One statement in a direct transaction: its rows. Several may be issued at once; pg sends them in order. */
export type DirectQuery = (text: string, values: ReadonlyArray<unknown>) => Promise<ReadonlyArray<unknown>>

export interface DirectSession {
  readonly query: DirectQuery
  /**
   * The transaction's last statement, with COMMIT queued behind it: node-postgres sends the COMMIT
   * as soon as the statement's answer arrives, before any other work of the event loop, so the
   * locks it takes are held for about one round trip. The statement must raise an error when it
   * did not do its work (`assert_true`): the transaction is then aborted and its COMMIT is a
   * ROLLBACK. Its rows if it committed, undefined if it rolled back.
   */
  readonly queryAndCommit: (text: string, values: ReadonlyArray<unknown>) => Promise<ReadonlyArray<unknown> | undefined>
}

/**
 * A transaction straight on one client of the pool, for the fast lane's buy: `work` runs after
 * BEGIN (queued with its first statements) and ends it with
 * `queryAndCommit`; when it returns undefined instead, the transaction is rolled back. When `work`
 * throws, the client is rolled back and discarded, and the error is thrown on.
 */
export type DirectTransaction = <A>(work: (session: DirectSession) => Promise<A | undefined>) => Promise<A | undefined>

/** Direct transactions on the PostgreSQL pool; none on PGlite, for the reason of DirectReads. */
export class DirectTransactions
  extends Context.Tag("DirectTransactions")<DirectTransactions, Option.Option<DirectTransaction>>()
{}

const directTransaction = (pool: pg.Pool): DirectTransaction => async (work) => {
  const client = await pool.connect()
  let ended = false
  const query: DirectQuery = (text, values) => client.query(text, [...values]).then((result) => result.rows)
  const queryAndCommit = async (text: string, values: ReadonlyArray<unknown>) => {
    ended = true
    const [statement, commit] = await Promise.allSettled([query(text, values), client.query("COMMIT")])
    // no answer to the COMMIT: whether it committed is unknown, and the session is not reusable
    if (commit.status === "rejected") throw commit.reason
    return statement.status === "fulfilled" && commit.value.command === "COMMIT" ? statement.value : undefined
  }
  try {
    const [, value] = await Promise.all([client.query("BEGIN"), work({ query, queryAndCommit })])
    if (!ended) await client.query("ROLLBACK")
    client.release()
    return value
  } catch (error) {
    // the session may be mid-transaction or broken: never hand it back to the pool
    if (!ended) await client.query("ROLLBACK").catch(() => undefined)
    client.release(error instanceof Error ? error : new Error(String(error)))
    throw error
  }
}

const postgresql = (url: string) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new pg.Pool({
          connectionString: url,
          max: 20,
          idleTimeoutMillis: 30_000,
          application_name: "merchant-purchasing-service"
        })
        // a connection that breaks while idle is dropped by the pool; queries report their own errors
        pool.on("error", () => {})
        return pool
      }),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption("1 second"))
    )
    yield* Effect.tryPromise({
      try: () => pool.query("SELECT 1"),
      catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
    }).pipe(Effect.timeoutFail({
      duration: "5 seconds",
      onTimeout: () => new SqlError.SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
    }))
    const read: DirectRead = (text, values) => pool.query(text, [...values]).then((result) => result.rows)
    return Layer.mergeAll(
      PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "merchant-purchasing-service" }),
      Layer.succeed(DirectReads, Option.some(read)),
      Layer.succeed(DirectTransactions, Option.some(directTransaction(pool)))
    )
  }))

const client = Layer.unwrapEffect(Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isSome(settings.databaseUrl)) return postgresql(Redacted.value(settings.databaseUrl.value))
  const dir = join(settings.dataDir, "pg")
  mkdirSync(dir, { recursive: true })
  return Layer.mergeAll(Pglite.layer(dir), Layer.succeed(DirectReads, Option.none()), Layer.succeed(DirectTransactions, Option.none()))
}))

const migrated = Layer.effectDiscard(migrate.pipe(
  Effect.tap((applied) => applied.length > 0 ? Effect.logInfo("migrations applied", applied.map(([id, name]) => `${id}_${name}`)) : Effect.void)
))

/** SqlClient and PgClient, with every migration applied, and the pool's direct reads and transactions. */
export const DatabaseLive: Layer.Layer<
  SqlClient.SqlClient | PgClient.PgClient | DirectReads | DirectTransactions,
  unknown,
  Settings
> =
  Layer.provideMerge(migrated, client)
