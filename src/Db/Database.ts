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
    return Layer.merge(
      PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "merchant-purchasing-service" }),
      Layer.succeed(DirectReads, Option.some(read))
    )
  }))

const client = Layer.unwrapEffect(Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isSome(settings.databaseUrl)) return postgresql(Redacted.value(settings.databaseUrl.value))
  const dir = join(settings.dataDir, "pg")
  mkdirSync(dir, { recursive: true })
  return Layer.merge(Pglite.layer(dir), Layer.succeed(DirectReads, Option.none()))
}))

const migrated = Layer.effectDiscard(migrate.pipe(
  Effect.tap((applied) => applied.length > 0 ? Effect.logInfo("migrations applied", applied.map(([id, name]) => `${id}_${name}`)) : Effect.void)
))

/** SqlClient and PgClient, with every migration applied, and the pool's direct reads. */
export const DatabaseLive: Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | DirectReads, unknown, Settings> =
  Layer.provideMerge(migrated, client)
