/**
 * COPY ... FROM STDIN rows (src/Db/CopyIn.ts) sent in a pipeline (src/Db/Pipeline.ts) and in the
 * direct transaction (src/Db/Database.ts), on a real PostgreSQL server (DATABASE_URL only: PGlite has no pool): text
 * of every kind comes back exactly as written, a COPY that fails reports it and leaves the
 * connection usable, and a failed COPY rolls its transaction back whole. And, on either database,
 * the buffers COPY's rows are written into, taken again once given back.
 */
import { Predicate } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CopyBuffers, copyField, CopyRows } from "../../src/Db/CopyIn.js"
import { directTransaction } from "../../src/Db/Database.js"
import { pipelined } from "../../src/Db/Pipeline.js"
import { type FreshDatabase, freshDatabase, serverPool } from "../support/database.js"

/** Texts COPY's format must escape or carry as they are: backslashes, tabs, line ends, `\N`, beyond ASCII. */
const TRICKY = [
  "",
  "plain",
  "back\\slash and \\\\ two",
  "tab\there",
  "line\nend and\r\nwindows",
  "\\N",
  "N",
  "\\u2605 escaped, ★ not, ™ and 𝄞 (astral)",
  "\"quotes\" and 'apostrophes', commas, | pipes",
  "\u0001 control \u007f delete",
  "ends with a backslash \\"
]

describe("COPY's buffers, taken and given back", () => {
  it("gives a buffer of the size asked, the memory of one given back when it is large enough, and keeps no more than told", () => {
    const buffers = new CopyBuffers(1)
    const first = buffers.take(1_000)
    expect(first.length).toBe(1_000)
    const second = buffers.take(1_000)
    expect(second.buffer).not.toBe(first.buffer)
    buffers.give(first)
    buffers.give(second)
    // only one was kept (keep = 1): the next take has its memory, the one after is new
    const again = buffers.take(900)
    expect(again.length).toBe(900)
    expect(again.buffer).toBe(first.buffer)
    expect(buffers.take(900).buffer).not.toBe(second.buffer)
    buffers.give(again)
    // one larger than any kept is new memory
    const larger = buffers.take(10_000)
    expect(larger.length).toBe(10_000)
    expect(larger.buffer).not.toBe(first.buffer)
  })

  it("rows written into a buffer taken again are the new rows alone", () => {
    const buffers = new CopyBuffers(2)
    const long = new CopyRows()
    long.add([1, "a long row that leaves bytes behind", null])
    buffers.give(long.bytes(buffers))
    const short = new CopyRows()
    const field = copyField("tab\there")
    short.add([2, field, field])
    expect(short.bytes(buffers).toString("utf8")).toBe("2\ttab\\there\ttab\\there\n")
  })
})

describe.runIf(!!process.env["DATABASE_URL"])("COPY FROM STDIN (DATABASE_URL only)", () => {
  let database: FreshDatabase
  let pool: pg.Pool
  beforeAll(async () => {
    database = await freshDatabase()
    pool = serverPool(database.url, 2)
    await pool.query("CREATE TABLE copied (id bigint PRIMARY KEY, body text, twice text, note text)")
  })
  afterAll(async () => {
    await pool?.end()
    await database?.drop()
  })

  const COPY = "COPY copied (id, body, twice, note) FROM STDIN"

  it("writes every text, number and null exactly as given, a field made once written in two columns", async () => {
    const rows = new CopyRows()
    TRICKY.forEach((text, i) => {
      const field = copyField(text)
      rows.add([i + 1, text, field, i % 2 === 0 ? null : field])
    })
    const client = await pool.connect()
    try {
      const outcome = await pipelined(client, [[COPY, [], rows.bytes()]])
      if (outcome._tag !== "done") throw new Error("the COPY failed")
      expect(outcome.results[0]).toMatchObject({ command: "COPY", rowCount: TRICKY.length })
    } finally {
      client.release()
    }
    const stored = await pool.query<{ id: string; body: string; twice: string; note: string | null }>("SELECT id, body, twice, note FROM copied ORDER BY id")
    expect(stored.rows).toEqual(TRICKY.map((text, i) => ({ id: String(i + 1), body: text, twice: text, note: i % 2 === 0 ? null : text })))
  })

  it("reports a COPY that fails, skips the statements after it, and the connection goes on answering", async () => {
    const client = await pool.connect()
    try {
      const duplicate = new CopyRows()
      duplicate.add([1, "again", null, null])
      const outcome = await pipelined(client, [[COPY, [], duplicate.bytes()], ["INSERT INTO copied (id, body) VALUES (2000, 'after')", []]])
      if (outcome._tag !== "failed") throw new Error("a duplicate key was copied")
      expect(outcome.at).toBe(0)
      expect(Predicate.hasProperty(outcome.error, "code") ? outcome.error.code : undefined).toBe("23505")
      // a COPY that fails before it reads its rows (no such column): the rows sent with it are ignored
      const unknown = await pipelined(client, [["COPY copied (id, nope) FROM STDIN", [], Buffer.from("1\tx\n")], ["SELECT 1", []]])
      expect(unknown._tag === "failed" && Predicate.hasProperty(unknown.error, "code") ? unknown.error.code : undefined).toBe("42703")
      const malformed = await pipelined(client, [["COPY copied (id, body) FROM STDIN", [], Buffer.from("not a number\tx\n")]])
      expect(malformed._tag).toBe("failed")
      expect((await client.query("SELECT count(*)::int AS n FROM copied")).rows).toEqual([{ n: TRICKY.length }])
    } finally {
      client.release()
    }
  })

  it("in a direct transaction: a failed COPY rolls back what the transaction wrote before it, and skips its COMMIT", async () => {
    const transaction = directTransaction(pool)
    const fresh = new CopyRows()
    fresh.add([1_000, "new", null, null])
    const clash = new CopyRows()
    clash.add([1, "clash", null, null])
    const outcome = await transaction(async (session) => {
      if ((await session.queries([["INSERT INTO copied (id, body) VALUES (999, 'before')", []], [COPY, [], fresh.bytes()]])) === undefined) {
        return "first copy failed"
      }
      return (await session.queriesAndCommit([[COPY, [], clash.bytes()]])) === undefined ? "rolled back" : "copied"
    })
    expect(outcome).toBe("rolled back")
    expect((await pool.query("SELECT count(*)::int AS n FROM copied WHERE id IN (999, 1000)")).rows).toEqual([{ n: 0 }])

    // a COPY and a read of what it wrote, with the BEGIN and the COMMIT: one round trip
    const committed = await transaction((session) => session.queriesAndCommit([[COPY, [], fresh.bytes()], ["SELECT body FROM copied WHERE id = 1000", []]]))
    expect(committed).toEqual([[], [{ body: "new" }]])
    expect((await pool.query("SELECT body FROM copied WHERE id = 1000")).rows).toEqual([{ body: "new" }])
  })
})
