/**
 * The database layer: a PostgreSQL server when DATABASE_URL is set, otherwise the embedded PGlite
 * in DATA_DIR/pg. Migrations are applied before the layer is ready.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option } from "effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { Settings } from "../Config.js"
import * as Pglite from "./Pglite.js"
import { migrate } from "./Migrations.js"

export const DatabaseKind = (settings: Settings) => Option.isSome(settings.databaseUrl) ? "postgresql" : "pglite"

const client = Layer.unwrapEffect(Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isSome(settings.databaseUrl)) {
    return PgClient.layer({
      url: settings.databaseUrl.value,
      maxConnections: 20,
      idleTimeout: Duration.seconds(30),
      applicationName: "merchant-purchasing-service"
    })
  }
  const dir = join(settings.dataDir, "pg")
  mkdirSync(dir, { recursive: true })
  return Pglite.layer(dir)
}))

const migrated = Layer.effectDiscard(migrate.pipe(
  Effect.tap((applied) => applied.length > 0 ? Effect.logInfo("migrations applied", applied.map(([id, name]) => `${id}_${name}`)) : Effect.void)
))

/** SqlClient and PgClient, with every migration applied. */
export const DatabaseLive: Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, unknown, Settings> =
  Layer.provideMerge(migrated, client)
