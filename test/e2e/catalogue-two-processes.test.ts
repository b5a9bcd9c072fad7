/**
 * Two processes on one PostgreSQL behave as one catalogue (CONTRACT 1, 3: "any node resumes any
 * valid cursor"): a dump's cursor and epoch from one node resume on the other, and a client that
 * read the feed up to a cursor on one node gets exactly the following changes on the other; items
 * bought through both nodes at once leave the catalogue once each, in one gapless log. A node
 * whose LISTEN connections die listens again.
 * PostgreSQL only: on PGlite two processes cannot share a database.
 */
import { randomUUID } from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  applyChanges,
  type Change,
  deleteItem,
  eventually,
  expectedItem,
  expectGaplessFeed,
  Feed,
  type Item,
  type ItemInput,
  putItems,
  rawGet,
  simpleItem
} from "../support/catalogue.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { bought, buyBody, fundedMerchant } from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

describe.runIf(!!process.env["DATABASE_URL"])("catalogue on two processes sharing one PostgreSQL (DATABASE_URL only)", () => {
  let database: FreshDatabase
  let a: RunningServer
  let b: RunningServer
  let key: string
  const feeds: Array<Feed> = []
  const model = new Map<string, Item>()

  const env = { SIM_CATALOGUE_SIZE: "0", SIM_CHURN_PER_SECOND: "0", DUMP_INTERVAL_SECONDS: "1", RATE_LIMIT_RPS: "100000", RATE_LIMIT_BURST: "100000" }

  const open = async (server: RunningServer, cursor: number, epoch: number) => {
    const feed = await Feed.open(server, key, cursor, epoch)
    feeds.push(feed)
    return feed
  }

  const newItem = (cents: number): Item => {
    const id = randomUUID()
    return expectedItem(simpleItem(id, cents, `Two ${cents}`), id)
  }
  const upsert = async (server: RunningServer, items: ReadonlyArray<Item>): Promise<Array<Change>> => {
    await putItems(server, items as unknown as ReadonlyArray<ItemInput>)
    for (const item of items) model.set(item.id, item)
    return items.map((item) => ({ op: "upsert", item }))
  }
  const remove = async (server: RunningServer, id: string): Promise<Array<Change>> => {
    await deleteItem(server, id)
    model.delete(id)
    return [{ op: "remove", id }]
  }
  /** A few upserts, a price change and a delete of an older item, through `server`. */
  const someChanges = async (server: RunningServer, base: number): Promise<Array<Change>> => {
    const older = [...model.values()]
    const out = await upsert(server, [newItem(base), newItem(base + 1), { ...older[0]!, price: (base + 2) / 100 }])
    out.push(...await remove(server, older[older.length - 1]!.id))
    return out
  }

  /** A dump from `server` once it shows the whole model (so it is at the log's head). */
  const dumpAtHead = (server: RunningServer) =>
    eventually(
      async () => {
        const res = await rawGet(`${server.baseUrl}/api/v1/merchant/items/full-dump`, { authorization: `Bearer ${key}` })
        expect(res.status).toBe(200)
        const body = JSON.parse(res.body.toString())
        const items = new Map<string, unknown>(body.items.map((i: Item) => [i.id, i]))
        expect(items).toEqual(model)
        return { cursor: Number(res.headers["x-catalog-cursor"]), epoch: Number(res.headers["x-catalog-epoch"]), items }
      },
      60_000,
      200
    )

  beforeAll(async () => {
    database = await freshDatabase()
    a = await startServer({ database, env })
    b = await startServer({ database, env })
    key = (await a.createMerchant()).apiKey
    await upsert(a, Array.from({ length: 6 }, (_, i) => newItem(100 + i)))
  })
  afterAll(async () => {
    for (const feed of feeds) feed.close()
    await a?.stop()
    await b?.stop()
    await database?.drop()
  })

  it("a dump's cursor and epoch from A resume on B: the dump plus B's changes equals B's later dump", async () => {
    await someChanges(a, 200)
    const fromA = await dumpAtHead(a)
    // both nodes are in one epoch, at one cursor
    const fromB = await dumpAtHead(b)
    expect([fromB.epoch, fromB.cursor]).toEqual([fromA.epoch, fromA.cursor])

    // more changes, through both nodes, interleaved
    const expected: Array<Change> = []
    expected.push(...await someChanges(a, 400))
    expected.push(...await someChanges(b, 500))
    expected.push(...await someChanges(a, 600))
    const laterB = await dumpAtHead(b)
    const laterA = await dumpAtHead(a)
    expect(laterA.cursor).toBe(laterB.cursor)
    expect(laterB.cursor).toBe(fromA.cursor + expected.length)

    const onB = await open(b, fromA.cursor, fromA.epoch)
    await onB.waitForCursor(laterB.cursor)
    expect(expectGaplessFeed(onB.messages, fromA.epoch, fromA.cursor)).toBe(laterB.cursor)
    expect(onB.changes()).toEqual(expected)
    const replayed = applyChanges(new Map(fromA.items), onB.changes())
    expect(replayed).toEqual(laterB.items)
    expect(replayed).toEqual(laterA.items)
    expect(new Set(replayed.keys())).toEqual(new Set(model.keys()))
    for (const [id, item] of model) expect(replayed.get(id)).toEqual(item)

    // and the reverse: B's dump resumes on A
    const onA = await open(a, fromA.cursor, fromA.epoch)
    await onA.waitForCursor(laterB.cursor)
    expect(onA.changes()).toEqual(expected)
    onB.close()
    onA.close()
  })

  it("a client that read up to cursor X on one node resumes on the other from X: nothing lost, nothing repeated", async () => {
    const { epoch } = await dumpAtHead(a)

    for (const [first, second] of [[a, b], [b, a]] as const) {
      const from = (await dumpAtHead(first)).cursor
      const reference = await open(a, from, epoch)
      const client = await open(first, from, epoch)
      const expected: Array<Change> = []
      expected.push(...await someChanges(a, 900))
      expected.push(...await someChanges(b, 1000))
      const x = from + expected.length
      await client.waitForCursor(x)
      expect(expectGaplessFeed(client.messages, epoch, from)).toBe(x)
      const read = client.changes()
      client.close()

      // written while the client was away, through both nodes; then resumed on the other node at once
      expected.push(...await someChanges(second, 1100))
      expected.push(...await someChanges(first, 1200))
      const end = from + expected.length
      const resumed = await open(second, x, epoch)
      await resumed.waitForCursor(end)
      expect(expectGaplessFeed(resumed.messages, epoch, x)).toBe(end)
      expect([...read, ...resumed.changes()]).toEqual(expected)

      await reference.waitForCursor(end)
      expect(reference.changes()).toEqual(expected)
      resumed.close()
      reference.close()
    }
  })

  it("a node whose LISTEN connections were killed listens again and hears the other node's changes at once", async () => {
    const { cursor, epoch } = await dumpAtHead(a)
    const onB = await open(b, cursor, epoch)
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    try {
      const channels = ["catalogue_changes", "purchase_changed", "merchant_auth_changed"]
      const listeners = async () =>
        (await admin.query<{ pid: number; query: string }>(
          "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"
        )).rows
      const before = await listeners()
      // one LISTEN connection per channel on each node
      for (const channel of channels) expect(before.filter((l) => l.query === `LISTEN "${channel}"`), channel).toHaveLength(2)
      // the cut is this test's own fault: each node's listeners restart once for it
      for (const node of [a, b]) node.expectErrors(/supervised fiber lost its database connection/)
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'")

      // each node's supervisor listens again on new connections
      await eventually(
        async () => {
          const after = await listeners()
          for (const channel of channels) {
            const now = after.filter((l) => l.query === `LISTEN "${channel}"`)
            expect(now, channel).toHaveLength(2)
            for (const l of now) expect(before.map((b) => b.pid), channel).not.toContain(l.pid)
          }
        },
        20_000,
        100
      )

      // a change through A reaches B's feed by notification, well within B's 5 s safety poll
      const changes = await someChanges(a, 3_000)
      await onB.waitFor(() => onB.changes().length >= changes.length, "the changes made through A", 3_000)
      expect(onB.changes()).toEqual(changes)
    } finally {
      await admin.end()
      onB.close()
    }
  })

  it("items bought through both nodes at once each leave the feed exactly once, the same on both nodes", async () => {
    const merchant = await fundedMerchant(a, 100_000)
    const forSale = Array.from({ length: 40 }, (_, i) => newItem(2_000 + i))
    await upsert(a, forSale)
    const { cursor, epoch } = await dumpAtHead(a)
    const onA = await open(a, cursor, epoch)
    const onB = await open(b, cursor, epoch)

    // each a 201 PurchaseCreated (the typed client takes no other status)
    await Promise.all(forSale.map((item, i) => bought(i % 2 === 0 ? a : b, merchant, buyBody({ itemId: item.id, maxPrice: 100 }))))
    for (const item of forSale) model.delete(item.id)

    const end = cursor + forSale.length
    await onA.waitForCursor(end)
    await onB.waitForCursor(end)
    expect(expectGaplessFeed(onA.messages, epoch, cursor)).toBe(end)
    expect(expectGaplessFeed(onB.messages, epoch, cursor)).toBe(end)
    const removed = onA.changes()
    expect(removed.map((c) => c.op)).toEqual(forSale.map(() => "remove"))
    expect(removed.map((c) => c.id).sort()).toEqual(forSale.map((item) => item.id).sort())
    expect(onB.changes()).toEqual(removed)
    // and both nodes' dumps are the catalogue without them
    expect((await dumpAtHead(a)).cursor).toBe(end)
    expect((await dumpAtHead(b)).cursor).toBe(end)
    onA.close()
    onB.close()
  })
})
