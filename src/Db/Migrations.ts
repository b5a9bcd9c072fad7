/**
 * Applies the plain SQL files of `migrations/` (NNNN_name.sql) in order, once, under an advisory
 * lock so that several processes starting together on one PostgreSQL migrate exactly once.
 */
import { Migrator, SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const MIGRATIONS_TABLE = "schema_migrations"
const MIGRATION_LOCK_KEY = 7_311_001

/** `migrations/` sits at the repository root: two levels up from src/Db, three from dist/src/Db. */
const migrationsDirectory = (): string => {
  for (const relative of ["../../migrations/", "../../../migrations/"]) {
    const dir = fileURLToPath(new URL(relative, import.meta.url))
    if (existsSync(dir)) return dir
  }
  throw new Error("migrations directory not found")
}

const sqlFileLoader: Migrator.Loader = Effect.sync(() => {
  const dir = migrationsDirectory()
  return readdirSync(dir)
    .map((file) => file.match(/^(\d+)_(.+)\.sql$/))
    .filter((m): m is RegExpMatchArray => m !== null)
    .map(([file, id, name]) =>
      [
        Number(id),
        name!,
        Effect.sync(() => Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(readFileSync(dir + file, "utf8"))))
      ] as const
    )
    .sort((a, b) => a[0] - b[0])
})

const runMigrator = Migrator.make({})({ loader: sqlFileLoader, table: MIGRATIONS_TABLE })

export const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`
    yield* sql.unsafe(`CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
      migration_id integer PRIMARY KEY,
      created_at timestamptz NOT NULL DEFAULT now(),
      name text NOT NULL)`)
    return yield* runMigrator
  }))
}).pipe(Effect.withSpan("Db.migrate"))
