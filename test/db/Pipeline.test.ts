/**
 * Statements sent at once (src/Db/Pipeline.ts) and the buy engine's direct transaction built on
 * them (src/Db/Database.ts), on a real PostgreSQL server (DATABASE_URL only: PGlite has no pool):
 * one round trip for several statements, rows as node-postgres gives them, the first failure
 * skipping the rest, each text prepared once per connection, and a transaction's last statements
 * committed with it or rolled back whole.
 */
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { directTransaction } from "../../src/Db/Database.js"
import { pipelined } from "../../src/Db/Pipeline.js"
import { type FreshDatabase, freshDatabase, serverPool } from "../support/database.js"

describe.runIf(!!process.env["DATABASE_URL"])("statements sent at once (DATABASE_URL only)", () => {
  let database: FreshDatabase
  let pool: pg.Pool
  beforeAll(async () => {
    database = await freshDatabase()
    pool = serverPool(database.url, 2)
    await pool.query("CREATE TABLE notes (id bigint PRIMARY KEY, body text NOT NULL)")
    await pool.query(`CREATE FUNCTION must(ok boolean) RETURNS boolean LANGUAGE plpgsql AS $$
      BEGIN IF ok IS NOT TRUE THEN RAISE EXCEPTION 'must'; END IF; RETURN true; END $$`)
  })
  afterAll(async () => {
    await pool?.end()
    await database?.drop()
  })

  /** A client that counts the ReadyForQuery messages it receives: one per round trip. */
  const countingClient = async () => {
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    let roundTrips = 0
    client.connection.on("readyForQuery", () => {
      roundTrips++
    })
    return { client, roundTrips: () => roundTrips, done: () => client.end() }
  }

  it("answers several statements in one round trip, each with the rows node-postgres would give", async () => {
    const { client, roundTrips, done } = await countingClient()
    try {
      const statements = [
        ["INSERT INTO notes (id, body) VALUES ($1, $2), ($3, $4) RETURNING id, body", [1, "one", 2, "two"]],
        ["SELECT id, body, now() AS at, $1::int8 AS big, $2::jsonb AS doc FROM notes ORDER BY id", ["9007199254740993", { a: [1, "é"] }]],
        ["SELECT count(*) AS n FROM notes WHERE id = ANY($1::int8[])", [[1, 2, 3]]]
      ] as const
      const outcome = await pipelined(client, statements)
      expect(roundTrips()).toBe(1)
      expect(outcome._tag).toBe("done")
      if (outcome._tag !== "done") return
      expect(outcome.results.map((r) => r.command)).toEqual(["INSERT", "SELECT", "SELECT"])
      // the same statements one by one: the same rows (int8 as text, timestamps as Dates, jsonb parsed)
      await client.query("DELETE FROM notes")
      const one = await client.query(statements[0][0], [...statements[0][1]])
      expect(outcome.results[0]!.rows).toEqual(one.rows)
      const two = await client.query(statements[1][0], [...statements[1][1]])
      expect(outcome.results[1]!.rows.map((r) => ({ ...(r as object), at: null }))).toEqual(two.rows.map((r) => ({ ...r, at: null })))
      expect((outcome.results[1]!.rows[0] as { at: unknown }).at).toBeInstanceOf(Date)
      expect(outcome.results[2]!.rows).toEqual([{ n: "2" }])
    } finally {
      await client.query("DELETE FROM notes")
      await done()
    }
  })

  it("stops at the first failing statement: outside a transaction they are one implicit transaction, rolled back whole; the client goes on", async () => {
    const { client, roundTrips, done } = await countingClient()
    try {
      const outcome = await pipelined(client, [
        ["INSERT INTO notes (id, body) VALUES (10, 'kept')", []],
        ["SELECT must(false)", []],
        ["INSERT INTO notes (id, body) VALUES (11, 'skipped')", []]
      ])
      expect(outcome).toMatchObject({ _tag: "failed", at: 1 })
      // statements up to one Sync are one implicit transaction: the first was rolled back, the third never ran
      expect((await client.query("SELECT id FROM notes ORDER BY id")).rows).toEqual([])
      expect((await client.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }])
      // the failure is reported at once; its round trip ends before the next query's two
      expect(roundTrips()).toBe(3)
    } finally {
      await client.query("DELETE FROM notes")
      await done()
    }
  })

  it("binds every kind of parameter the service passes as node-postgres's own queries bind it", async () => {
    const { client, done } = await countingClient()
    try {
      const values = [
        "quotes \" ' and \\ backslash, é, {braces}, a,comma",
        -42,
        0.1,
        9007199254740993n,
        true,
        false,
        new Date("2026-12-02T10:11:12.345Z"),
        null,
        undefined,
        ["a", "", "NULL", null, "x\"y", "back\\slash", "{}", "with space", "é"],
        [1, -2, null],
        [[1, 2], [3, 4]],
        [true, false, null],
        [new Date("2026-12-02T10:11:12.345Z"), null],
        Buffer.from([0, 1, 254, 255]),
        new Uint8Array([7, 8, 9]).subarray(1),
        [Buffer.from([0xde, 0xad]), null],
        { a: [1, "é", null], b: { c: true }, "q\"": "\\" }
      ]
      const text = `SELECT $1::text AS text, $2::int4 AS int, $3::float8 AS float, $4::int8 AS big, $5::bool AS yes, $6::bool AS no,
        $7::timestamptz AS at, $8::text AS null1, $9::text AS null2, $10::text[] AS texts, $11::int4[] AS ints, $12::int4[] AS matrix,
        $13::bool[] AS bools, $14::timestamptz[] AS ats, $15::bytea AS bytes, $16::bytea AS view, $17::bytea[] AS byteses, $18::jsonb AS doc,
        $10::text[]::text AS literal`
      const outcome = await pipelined(client, [[text, values]])
      expect(outcome._tag).toBe("done")
      if (outcome._tag !== "done") return
      const own = await client.query(text, values)
      expect(outcome.results[0]!.rows).toEqual(own.rows)
      expect(own.rows[0].texts).toEqual(values[9])
      expect(own.rows[0].view).toEqual(Buffer.from([8, 9]))
    } finally {
      await done()
    }
  })

  it("refuses a parameter of a kind it does not bind, before anything is sent; the client goes on", async () => {
    const { client, roundTrips, done } = await countingClient()
    try {
      await expect(pipelined(client, [["SELECT 1", []], ["SELECT $1::text", [Symbol("no")]]])).rejects.toThrow(TypeError)
      expect(roundTrips()).toBe(0)
      expect(await pipelined(client, [["SELECT 1 AS one", []]])).toMatchObject({ _tag: "done", results: [{ rows: [{ one: 1 }] }] })
    } finally {
      await done()
    }
  })

  it("prepares each text once per connection; what a failure kept from being prepared is prepared next time", async () => {
    const { client, done } = await countingClient()
    const prepared = async () =>
      (await client.query("SELECT statement FROM pg_prepared_statements ORDER BY statement")).rows.map((r: { statement: string }) => r.statement)
    const insert = "INSERT INTO notes (id, body) VALUES ($1, $2)"
    const count = "SELECT count(*) AS n FROM notes"
    try {
      // the same text twice in one pipeline and again in the next: prepared once, run every time
      expect(await pipelined(client, [[insert, [30, "a"]], [insert, [31, "b"]]])).toMatchObject({ _tag: "done" })
      expect(await pipelined(client, [[insert, [32, "c"]], [count, []]])).toMatchObject({ _tag: "done", results: [{}, { rows: [{ n: "3" }] }] })
      expect(await prepared()).toEqual([count, insert].sort())
      // the first statement fails when run (it was prepared); the second's Parse is skipped by the server
      const late = "SELECT $1::text AS late"
      expect(await pipelined(client, [["SELECT must(false)", []], [late, ["x"]]])).toMatchObject({ _tag: "failed", at: 0 })
      expect(await pipelined(client, [["SELECT must(true)", []], [late, ["y"]]])).toMatchObject({ _tag: "done", results: [{}, { rows: [{ late: "y" }] }] })
      expect(await prepared()).toEqual([count, insert, late, "SELECT must(false)", "SELECT must(true)"].sort())
      // a text that does not parse fails each time with its own error, never a missing or duplicate statement
      for (let i = 0; i < 2; i++) {
        const outcome = await pipelined(client, [["SELEC 1", []]])
        expect(outcome._tag).toBe("failed")
        if (outcome._tag === "failed") expect(String((outcome.error as Error).message)).toMatch(/syntax error/)
      }
    } finally {
      await client.query("DELETE FROM notes")
      await done()
    }
  })

  it("a direct transaction drops a connection whose prepared statements went out of date; the next one prepares afresh", async () => {
    const single = serverPool(database.url, 1)
    try {
      await single.query("CREATE TABLE shapes (id bigint PRIMARY KEY, body text NOT NULL)")
      await single.query("INSERT INTO shapes VALUES (1, 'a')")
      const transaction = directTransaction(single)
      const read = () => transaction(async ({ queries }) => (await queries([["SELECT * FROM shapes ORDER BY id", []]]))?.[0])
      expect(await read()).toEqual([{ id: "1", body: "a" }])
      // a migration changes the prepared statement's result type: that transaction fails, its connection goes
      await single.query("ALTER TABLE shapes ADD COLUMN extra text")
      expect(await read()).toBeUndefined()
      expect(await read()).toEqual([{ id: "1", body: "a", extra: null }])
    } finally {
      await single.query("DROP TABLE IF EXISTS shapes")
      await single.end()
    }
  })

  it("a direct transaction commits its last statements with it, or rolls everything back", async () => {
    const transaction = directTransaction(pool)
    const committed = await transaction(async ({ queries, queriesAndCommit }) => {
      const first = await queries([["INSERT INTO notes (id, body) VALUES (20, 'a') RETURNING id", []], ["SELECT count(*) AS n FROM notes", []]])
      expect(first).toEqual([[{ id: "20" }], [{ n: "1" }]])
      return queriesAndCommit([
        ["INSERT INTO notes (id, body) SELECT 21, 'b' WHERE must(true) RETURNING id", []],
        ["SELECT count(*) AS n FROM notes", []]
      ])
    })
    expect(committed).toEqual([[{ id: "21" }], [{ n: "2" }]])

    const refused = await transaction(async ({ queries, queriesAndCommit }) => {
      await queries([["INSERT INTO notes (id, body) VALUES (22, 'c')", []]])
      // the first of the last statements succeeds, the second refuses: neither commits
      return queriesAndCommit([
        ["INSERT INTO notes (id, body) VALUES (26, 'g')", []],
        ["INSERT INTO notes (id, body) SELECT 23, 'd' WHERE must(false) RETURNING id", []]
      ])
    })
    expect(refused).toBeUndefined()

    const failedEarly = await transaction(async ({ queries, queriesAndCommit }) => {
      const rows = await queries([["INSERT INTO notes (id, body) VALUES (24, 'e')", []], ["INSERT INTO notes (id, body) VALUES (20, 'dup')", []]])
      return rows === undefined ? undefined : queriesAndCommit([["SELECT 1", []]])
    })
    expect(failedEarly).toBeUndefined()

    const abandoned = await transaction(async ({ queries }) => {
      await queries([["INSERT INTO notes (id, body) VALUES (25, 'f')", []]])
      return undefined
    })
    expect(abandoned).toBeUndefined()

    expect((await pool.query("SELECT id FROM notes ORDER BY id")).rows).toEqual([{ id: "20" }, { id: "21" }])
    // every client went back to the pool idle, outside any transaction
    const states = await pool.query("SELECT state FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
    for (const { state } of states.rows) expect(state).toBe("idle")
  })
})
