/**
 * A statement as raw extended-protocol messages with binary parameters (src/Db/BinaryStatement.ts),
 * run on the embedded database (PgliteProtocol): values of every kind come back as sent; a failed
 * statement carries PostgreSQL's fields and leaves its transaction to be rolled back whole; outside
 * a transaction it waits for the session like any query. A copy of the migrated PGlite template,
 * whatever DATABASE_URL says: this is PGlite's path.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import { binaryStatement, PgliteProtocol } from "../../src/Db/BinaryStatement.js"
import { causeField, pgliteCopyLayer, wallClockSleep } from "../support/pglite.js"

const DatabaseTest = pgliteCopyLayer("pglite-binary-")

const run = (messages: Uint8Array) =>
  Effect.flatMap(PgliteProtocol, (protocol) => Option.isSome(protocol) ? protocol.value(messages) : Effect.dieMessage("no PgliteProtocol on PGlite"))

const TEXTS = ["", "plain", "\"quoted\" and \\backslash\\ and {braces,commas}", "tab\tline\nreturn\r\n", "★ Karambit ™ 𝄞 é", "x".repeat(100_000)]
const INTEGERS = [0, 1, -1, 4_294_967_295, 4_294_967_296, -4_294_967_296, -4_294_967_297, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]

describe("a binary statement on PGlite", () => {
  it.layer(DatabaseTest, { timeout: 60_000 })((it) => {
    it.effect("text and int8 arrays, NULLs and a single text come back as sent, in order", () =>
      Effect.gen(function*() {
        const texts = [...TEXTS, null, ...TEXTS.slice(0, 3)]
        const rows = yield* run(binaryStatement(
          "SELECT t, t IS NULL, length(t), $2 || '!' FROM unnest($1::text[]) WITH ORDINALITY AS page (t, n) ORDER BY n",
          [{ type: "text[]", values: texts }, { type: "text", value: "€ single" }]
        ))
        expect(rows).toEqual(texts.map((t) => [t, t === null ? "t" : "f", t === null ? null : String([...t].length), "€ single!"]))
        const integers = yield* run(binaryStatement(
          "SELECT i::text FROM unnest($1::int8[]) WITH ORDINALITY AS page (i, n) ORDER BY n",
          [{ type: "int8[]", values: INTEGERS }]
        ))
        expect(integers).toEqual(INTEGERS.map((i) => [String(i)]))
      }))

    it.effect("its buffer is handed to PGlite's thread: sent again, it is refused instead of waiting", () =>
      Effect.gen(function*() {
        const messages = binaryStatement("SELECT $1::text", [{ type: "text", value: "once" }])
        expect(yield* run(messages)).toEqual([["once"]])
        expect(messages.byteLength).toBe(0)
        const again = yield* Effect.flip(run(messages))
        expect(again.message).toContain("no messages")
        expect(yield* run(binaryStatement("SELECT $1::text", [{ type: "text", value: "after" }]))).toEqual([["after"]])
      }))

    it.effect("empty arrays give no rows", () =>
      Effect.gen(function*() {
        const rows = yield* run(
          binaryStatement("SELECT * FROM unnest($1::text[], $2::int8[])", [{ type: "text[]", values: [] }, { type: "int8[]", values: [] }])
        )
        expect(rows).toEqual([])
      }))

    it.effect("a number that is not a safe integer is refused before anything is sent", () =>
      Effect.sync(() => {
        expect(() => binaryStatement("SELECT $1::int8[]", [{ type: "int8[]", values: [1.5] }])).toThrow(RangeError)
        expect(() => binaryStatement("SELECT $1::int8[]", [{ type: "int8[]", values: [2 ** 53] }])).toThrow(RangeError)
      }))

    it.effect("a failed statement carries its SQLSTATE and constraint; its transaction is rolled back whole and the session goes on", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE binary_unique (id int8 PRIMARY KEY, name text)`
        const insert = (ids: ReadonlyArray<number>) =>
          run(
            binaryStatement("INSERT INTO binary_unique SELECT id, 'n' || id FROM unnest($1::int8[]) AS page (id) RETURNING id", [{
              type: "int8[]",
              values: ids
            }])
          )
        const failed = yield* Effect.exit(sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO binary_unique VALUES (100, 'before')`
          yield* insert([1, 2, 2])
        })))
        expect(Exit.isFailure(failed)).toBe(true)
        if (Exit.isFailure(failed)) {
          const error = failed.cause._tag === "Fail" ? failed.cause.error : undefined
          expect(error !== undefined && causeField(error, "code")).toBe("23505")
          expect(error !== undefined && causeField(error, "constraint")).toBe("binary_unique_pkey")
        }
        expect(yield* sql`SELECT id FROM binary_unique`).toEqual([])
        // the session is usable at once, by both paths
        expect(yield* sql.withTransaction(insert([1, 2]))).toEqual([["1"], ["2"]])
        expect((yield* sql<{ id: string }>`SELECT id FROM binary_unique ORDER BY id`).map((r) => r.id)).toEqual(["1", "2"])
        const syntax = yield* Effect.flip(run(binaryStatement("SELEC $1::text", [{ type: "text", value: "x" }])))
        expect(causeField(syntax, "code")).toBe("42601")
      }))

    it.effect("outside a transaction it waits for another fiber's transaction to end, and is not rolled back with it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE binary_lock (n int8 NOT NULL)`
        const inside = yield* Deferred.make<void>()
        const transaction = yield* Effect.fork(Effect.exit(sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO binary_lock VALUES (1)`
          yield* Deferred.succeed(inside, undefined)
          yield* wallClockSleep(300)
          return yield* Effect.fail("rolled back on purpose")
        }))))
        yield* Deferred.await(inside)
        // sent during the other transaction: run in it, it would be rolled back with it
        yield* run(binaryStatement("INSERT INTO binary_lock SELECT n FROM unnest($1::int8[]) AS page (n)", [{ type: "int8[]", values: [2] }]))
        expect(Exit.isFailure(yield* Fiber.join(transaction))).toBe(true)
        expect((yield* sql<{ n: string }>`SELECT n FROM binary_lock`).map((r) => r.n)).toEqual(["2"])
      }))
  })
})
