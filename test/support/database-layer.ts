/**
 * A fresh, migrated test database as a layer (SqlClient, PgClient, DbNotifications and no DirectTransactions), for services tested in
 * process: a PGlite copy, or a new database on the PostgreSQL server of DATABASE_URL; dropped when
 * the layer is released.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { DirectTransactions } from "../../src/Db/Database.js"
import { listenOnOwnConnection } from "../../src/Db/Listen.js"
import { migrate } from "../../src/Db/Migrations.js"
import { DbNotifications } from "../../src/Db/Notifications.js"
import * as Pglite from "../../src/Db/Pglite.js"
import { freshDatabase } from "./database.js"

/** A test runs in one process, the database's only writer: no direct transactions (the buy engine's one-statement path on PGlite's terms). */
const NoDirectTransactions = Layer.succeed(DirectTransactions, Option.none())

export const DatabaseTest = Layer.unwrapScoped(Effect.gen(function*() {
  const database = yield* Effect.acquireRelease(Effect.promise(freshDatabase), (db) => Effect.promise(db.drop))
  if (database.url === undefined) return Layer.merge(Pglite.layer(`${database.dataDir}/pg`), NoDirectTransactions)
  const client = PgClient.layer({ url: Redacted.make(database.url) }).pipe(Layer.provide(Reactivity.layer))
  const url = database.url
  const notifications = Layer.scoped(
    DbNotifications,
    Effect.map(
      Effect.acquireRelease(Effect.sync(() => new pg.Pool({ connectionString: url })), (pool) => Effect.promise(() => pool.end())),
      (pool) => ({ listen: listenOnOwnConnection(pool) })
    )
  )
  return Layer.mergeAll(Layer.provideMerge(Layer.effectDiscard(migrate), client), notifications, NoDirectTransactions)
}))
