/**
 * A fresh, migrated test database as a layer (SqlClient and PgClient), for services tested in
 * process: a PGlite copy, or a new database on the PostgreSQL server of DATABASE_URL; dropped when
 * the layer is released.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { migrate } from "../../src/Db/Migrations.js"
import * as Pglite from "../../src/Db/Pglite.js"
import { freshDatabase } from "./database.js"

export const DatabaseTest = Layer.unwrapScoped(Effect.gen(function*() {
  const database = yield* Effect.acquireRelease(Effect.promise(freshDatabase), (db) => Effect.promise(db.drop))
  if (database.url === undefined) return Pglite.layer(`${database.dataDir}/pg`)
  const client = PgClient.layer({ url: Redacted.make(database.url) }).pipe(Layer.provide(Reactivity.layer))
  return Layer.provideMerge(Layer.effectDiscard(migrate), client)
}))
