/**
 * The change log behind the realtime catalogue feed (CONTRACT 3): a cursor whose next changes were
 * pruned past the retention gets reset cursor_expired and close 4409 while the prune point still
 * resumes; with the log out of reach (PostgreSQL only), a feed is closed with 1011 and resumes once
 * the log is back.
 */
import { randomUUID } from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { availableDump, eventually, Feed, FEED_ENV, putItems, rawGet, simpleItem } from "../support/catalogue.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { type RunningServer, startServer } from "../support/server.js"

describe("catalogue realtime feed: retention", () => {
  let server: RunningServer
  // a retention of 3 s: the log is pruned every second
  beforeAll(async () => {
    server = await startServer({ env: { ...FEED_ENV, FEED_RETENTION_HOURS: String(3 / 3600) } })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("a cursor whose next changes are past the retention gets reset cursor_expired, then close 4409; the prune point itself still resumes", async () => {
    const key = (await server.createMerchant()).apiKey
    const ids = Array.from({ length: 3 }, () => randomUUID())
    await putItems(server, ids.map((id, i) => simpleItem(id, 100 + i, "Retention item")) as never)
    const dump = await eventually(
      async () => {
        const res = await rawGet(`${server.baseUrl}/api/v1/merchant/items/full-dump`, { authorization: `Bearer ${key}` })
        expect(JSON.parse(res.body.toString()).items_count).toBe(3)
        return res
      },
      60_000,
      200
    )
    const epoch = Number(dump.headers["x-catalog-epoch"])
    const cursor = Number(dump.headers["x-catalog-cursor"])
    expect(cursor).toBeGreaterThanOrEqual(3)
    // right away, the cursor before the last change resumes
    const early = await Feed.open(server, key, cursor - 1, epoch)
    await early.waitForCursor(cursor)
    early.ws.close()
    // once its changes are pruned, it is expired; the cursor at the prune point is not
    const expired = await eventually(
      async () => {
        const feed = await Feed.open(server, key, cursor - 1, epoch)
        const closed = await feed.waitForClose(5_000).catch(() => undefined)
        if (closed === undefined) feed.ws.close()
        expect(closed?.code).toBe(4409)
        return feed
      },
      30_000,
      500
    )
    expect(expired.messages).toEqual([{ type: "reset", reason: "cursor_expired" }])
    const atHead = await Feed.open(server, key, cursor, epoch)
    await atHead.waitFor((ms) => ms.length >= 1, "hello")
    expect(atHead.messages[0]).toEqual({ type: "hello", epoch, cursor })
    atHead.ws.close()
  }, 90_000)
})

describe.runIf(!!process.env["DATABASE_URL"])("catalogue realtime feed: the database out of reach (DATABASE_URL only)", () => {
  let server: RunningServer
  let database: FreshDatabase
  beforeAll(async () => {
    database = await freshDatabase()
    server = await startServer({ env: FEED_ENV, database })
  })
  afterAll(async () => {
    await server?.stop()
    await database?.drop()
  })

  it("a feed whose session cannot read the log is closed with 1011 (it was left open and told nothing); it resumes once the log is back", async () => {
    const key = (await server.createMerchant()).apiKey
    const { cursor, epoch } = await availableDump(server, key)
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    try {
      // the log's state out of reach, as in an outage, for the session's first read
      await client.query("ALTER TABLE catalogue_state RENAME TO catalogue_state_away")
      const cut = await Feed.open(server, key, cursor, epoch)
      expect(await cut.waitForClose(10_000)).toMatchObject({ code: 1011 })
      expect(cut.messages).toEqual([])
    } finally {
      await client.query("ALTER TABLE IF EXISTS catalogue_state_away RENAME TO catalogue_state")
      await client.end()
    }
    const resumed = await Feed.open(server, key, cursor, epoch)
    await resumed.waitFor((ms) => ms.length >= 1, "hello")
    expect(resumed.messages[0]).toEqual({ type: "hello", epoch, cursor })
    resumed.ws.close()
  }, 90_000)
})
