/**
 * The embedded database's adapter (src/Db/Pglite.ts) over its worker thread: PostgreSQL runs with
 * the thread's settings (PgliteWorker.ts), its error fields reach the caller (the purchase path
 * retries on SQLSTATE 40001/40P01 and reads constraint names), transactions commit or roll back
 * whole, concurrent transactions never interleave on the one session, notifications arrive, array
 * rows keep their order, and closing ends the thread.
 * A copy of the migrated PGlite template, whatever DATABASE_URL says: this is PGlite's own code.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Exit, Fiber, Stream } from "effect"
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { LISTENING } from "../../src/Db/Listen.js"
import * as Pglite from "../../src/Db/Pglite.js"
import { PGLITE_TEMPLATE, TMP } from "../support/paths.js"
import { causeField, pgliteCopyLayer, wallClockSleep } from "../support/pglite.js"

const DatabaseTest = pgliteCopyLayer("pglite-adapter-")

describe("PGlite in its worker thread", () => {
  it.layer(DatabaseTest, { timeout: 60_000 })((it) => {
    it.effect("a failed statement carries PostgreSQL's SQLSTATE, constraint and message", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE adapter_unique (id int PRIMARY KEY)`
        yield* sql`INSERT INTO adapter_unique VALUES (1)`
        const error = yield* Effect.flip(sql`INSERT INTO adapter_unique VALUES (1)`)
        expect(causeField(error, "code")).toBe("23505")
        expect(causeField(error, "constraint")).toBe("adapter_unique_pkey")
        expect(error.cause instanceof Error && error.cause.message).toContain("duplicate key")
        const syntax = yield* Effect.flip(sql.unsafe("SELEC 1"))
        expect(causeField(syntax, "code")).toBe("42601")
      }))

    it.effect("PostgreSQL runs with the thread's settings: a small cache, the log's buffers that hold a page of the first reconciliation", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const setting = (name: string) =>
          Effect.map(sql.unsafe<{ readonly setting: string }>("SELECT setting FROM pg_settings WHERE name = $1", [name]), ([row]) => row?.setting)
        // in 8 kB pages
        expect(yield* setting("shared_buffers")).toBe(String(32 * 128))
        expect(yield* setting("wal_buffers")).toBe(String(4 * 128))
        expect(yield* setting("wal_init_zero")).toBe("off")
      }))

    it.effect("a transaction that fails leaves nothing; one that succeeds keeps everything", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE adapter_tx (n int NOT NULL)`
        const failed = yield* Effect.exit(sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO adapter_tx VALUES (1)`
          yield* sql`INSERT INTO adapter_tx VALUES (NULL)`
        })))
        expect(Exit.isFailure(failed)).toBe(true)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO adapter_tx VALUES (2)`
          yield* sql`INSERT INTO adapter_tx VALUES (3)`
        }))
        const rows = yield* sql<{ n: number }>`SELECT n FROM adapter_tx ORDER BY n`
        expect(rows.map((r) => r.n)).toEqual([2, 3])
      }))

    it.effect("concurrent transactions on the one session run one after the other", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE adapter_counter (n int NOT NULL)`
        yield* sql`INSERT INTO adapter_counter VALUES (0)`
        // read, yield to the other fibers, write back: interleaving would lose increments
        const increment = sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<{ n: number }>`SELECT n FROM adapter_counter`
          yield* wallClockSleep(1)
          yield* sql`UPDATE adapter_counter SET n = ${row!.n + 1}`
        }))
        yield* Effect.all(Array.from({ length: 20 }, () => increment), { concurrency: "unbounded" })
        const [row] = yield* sql<{ n: number }>`SELECT n FROM adapter_counter`
        expect(row!.n).toBe(20)
      }))

    it.effect("int8 and numeric arrive as strings, as node-postgres gives them; array rows keep column order", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ big: unknown; exact: unknown }>`SELECT 9007199254740993::int8 AS big, 1.10::numeric AS exact`
        expect(row).toEqual({ big: "9007199254740993", exact: "1.10" })
        const values = yield* sql`SELECT 1 AS a, 'two' AS b, NULL AS c`.values
        expect(values).toEqual([[1, "two", null]])
      }))

    it.effect("LISTEN says when it is in force, then delivers pg_notify payloads in order", () =>
      Effect.gen(function*() {
        const pg = yield* PgClient.PgClient
        const listening = yield* Deferred.make<void>()
        const received = yield* pg.listen("adapter_channel").pipe(
          Stream.tap((payload) => payload === LISTENING ? Deferred.succeed(listening, undefined) : Effect.void),
          Stream.take(4),
          Stream.runCollect,
          Effect.fork
        )
        // notified only once the stream said its LISTEN is in force: none may be missed
        yield* Deferred.await(listening)
        for (const payload of ["one", "two", "three"]) yield* pg.notify("adapter_channel", payload)
        expect(Chunk.toReadonlyArray(yield* Fiber.join(received))).toEqual([LISTENING, "one", "two", "three"])
      }))
  })

  it.effect("the thread opens, answers and closes with its scope; a closed client fails instead of hanging", () =>
    Effect.gen(function*() {
      const copy = mkdtempSync(`${TMP}pglite-adapter-`)
      cpSync(PGLITE_TEMPLATE, `${copy}/pg`, { recursive: true })
      const leaked = yield* Effect.scoped(Effect.gen(function*() {
        const { pg } = yield* Pglite.make(`${copy}/pg`)
        const [row] = yield* pg<{ x: number }>`SELECT 41 + 1 AS x`
        expect(row!.x).toBe(42)
        return pg
      })).pipe(Effect.provide(Reactivity.layer))
      const after = yield* Effect.exit(leaked`SELECT 1`)
      expect(Exit.isFailure(after)).toBe(true)
      rmSync(copy, { recursive: true, force: true })
    }), 60_000)
})
