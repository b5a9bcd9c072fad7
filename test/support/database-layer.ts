/**
 * A fresh, migrated test database as a layer (SqlClient, PgClient and DbNotifications), for services tested in
 * process: a PGlite copy, or a new database on the PostgreSQL server of DATABASE_URL; dropped when
 * the layer is released.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import pg from "pg"
import { listenOnOwnConnection } from "../../src/Db/Listen.js"
import { migrate } from "../../src/Db/Migrations.js"
import { DbNotifications } from "../../src/Db/Notifications.js"
import * as Pglite from "../../src/Db/Pglite.js"
import { freshDatabase } from "./database.js"

export const DatabaseTest = Layer.unwrapScoped(Effect.gen(function*() {
  const database = yield* Effect.acquireRelease(Effect.promise(freshDatabase), (db) => Effect.promise(db.drop))
  if (database.url === undefined) return Pglite.layer(`${database.dataDir}/pg`)
  const client = PgClient.layer({ url: Redacted.make(database.url) }).pipe(Layer.provide(Reactivity.layer))
  const url = database.url
  const notifications = Layer.scoped(
    DbNotifications,
    Effect.map(
      Effect.acquireRelease(Effect.sync(() => new pg.Pool({ connectionString: url })), (pool) => Effect.promise(() => pool.end())),
      (pool) => ({ listen: listenOnOwnConnection(pool) })
    )
  )
  return Layer.merge(Layer.provideMerge(Layer.effectDiscard(migrate), client), notifications)
}))
