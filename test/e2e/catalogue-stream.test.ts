/**
 * The realtime catalogue feed (CONTRACT 3): hello first with the client's cursor and epoch;
 * changes in log order with gapless, strictly increasing cursors; heartbeats when idle; reset and
 * close 4409 for a wrong epoch or a cursor beyond the head; closed sessions leave nothing behind; a
 * restart keeps the epoch and resumes from the log; a slow consumer is closed with 4408 without
 * costing anyone else a change, and resumes from its last applied cursor with nothing lost or
 * repeated. Who may open a feed is in catalogue-stream-access.test.ts, the log's retention and
 * outage in catalogue-stream-log.test.ts.
 */
import { randomUUID } from "node:crypto"
import type { Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  availableDump,
  type Change,
  deleteItem,
  eventually,
  expectedItem,
  expectGaplessFeed,
  expectItemShape,
  Feed,
  FEED_ENV,
  type Item,
  metric,
  putItems,
  rawGet,
  simpleItem
} from "../support/catalogue.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { type RunningServer, startServer } from "../support/server.js"

describe("catalogue realtime feed", () => {
  let database: FreshDatabase
  let server: RunningServer
  let key: string
  /** The checkpoint of the first dump (before any test's changes). */
  let first: number
  let epoch: number
  /** The log's head as the last test left it (every change up to it applied everywhere). */
  let head: number
  const feeds: Array<Feed> = []
  const model = new Map<string, Item>()

  const open = async (cursor: number | string, e: number | string = epoch) => {
    const feed = await Feed.open(server, key, cursor, e)
    feeds.push(feed)
    return feed
  }

  /** Upserts and keeps the model; the changes the feed must carry, in order. */
  const upsert = async (items: ReadonlyArray<Item>): Promise<Array<Change>> => {
    await putItems(server, items as never)
    for (const item of items) model.set(item.id, item)
    return items.map((item) => ({ op: "upsert", item }))
  }
  const remove = async (id: string): Promise<Array<Change>> => {
    await deleteItem(server, id)
    model.delete(id)
    return [{ op: "remove", id }]
  }
  const newItem = (cents: number, imageBytes = 0): Item => {
    const id = randomUUID()
    return expectedItem(simpleItem(id, cents, "Feed item", imageBytes), id)
  }

  beforeAll(async () => {
    database = await freshDatabase()
    server = await startServer({ database, env: FEED_ENV })
    key = (await server.createMerchant()).apiKey
    await upsert(Array.from({ length: 10 }, (_, i) => newItem(100 + i)))
    // a dump that has them gives the checkpoint every test starts from
    const dump = await eventually(
      async () => {
        const res = await rawGet(`${server.baseUrl}/api/v1/merchant/items/full-dump`, { authorization: `Bearer ${key}` })
        expect(res.status).toBe(200)
        expect(JSON.parse(res.body.toString()).items_count).toBe(10)
        return res
      },
      60_000,
      200
    )
    epoch = Number(dump.headers["x-catalog-epoch"])
    head = Number(dump.headers["x-catalog-cursor"])
    first = head
    expect(head).toBeGreaterThanOrEqual(10)
  })
  afterAll(async () => {
    for (const feed of feeds) feed.close()
    await server?.stop()
    await database?.drop()
  })

  it("hello first with the given cursor and epoch, then every change in log order, cursors gapless and increasing", async () => {
    const live = await open(head)
    await live.waitFor((ms) => ms.length >= 1, "hello")
    expect(live.messages[0]).toEqual({ type: "hello", epoch, cursor: head })

    const [a, b, c, d] = [newItem(500), newItem(501), newItem(502), newItem(503)]
    const existing = [...model.values()]
    const expected: Array<Change> = []
    expected.push(...await upsert([a!, b!, c!]))
    expected.push(
      ...await upsert([{ ...existing[0]!, price: 9.99 }, d!, {
        ...a!,
        float: 0.25,
        stickers: [{ slot: 1, name: "Crown (Foil)", sticker_id: null, image_url: null, wear: null }]
      }])
    )
    expected.push(...await remove(existing[1]!.id))
    expected.push(...await remove(b!.id))
    const end = head + expected.length
    await live.waitForCursor(end)
    expect(expectGaplessFeed(live.messages, epoch, head)).toBe(end)
    expect(live.changes()).toEqual(expected)
    for (const change of live.changes()) if (change.op === "upsert") expectItemShape(change.item)

    // a client resuming from the old cursor now (catch-up), or from the middle of a batch, gets the same
    const late = await open(head)
    await late.waitForCursor(end)
    expect(expectGaplessFeed(late.messages, epoch, head)).toBe(end)
    expect(late.changes()).toEqual(expected)
    const middle = await open(head + 2)
    await middle.waitForCursor(end)
    expect(expectGaplessFeed(middle.messages, epoch, head + 2)).toBe(end)
    expect(middle.changes()).toEqual(expected.slice(2))
    // from the head itself: hello and nothing else
    const atHead = await open(end)
    await atHead.waitFor((ms) => ms.length >= 1, "hello")
    expect(atHead.messages[0]).toEqual({ type: "hello", epoch, cursor: end })
    // from the very beginning of the log: everything, the initial load included
    const fromStart = await open(0)
    await fromStart.waitForCursor(end)
    expect(expectGaplessFeed(fromStart.messages, epoch, 0)).toBe(end)
    expect(fromStart.changes().slice(-expected.length)).toEqual(expected)
    head = end
    for (const feed of [live, late, middle, atHead, fromStart]) {
      expect(feed.closed).toBeUndefined()
      feed.close()
    }
  })

  it("a heartbeat arrives when the feed is idle, at the current cursor", async () => {
    const idle = await open(head)
    await idle.waitFor((ms) => ms.length >= 1, "hello")
    // heartbeats come at least every 15 s of silence (CONTRACT 3); wait a little longer than that
    await idle.waitFor((ms) => ms.some((m) => m.type === "heartbeat"), "a heartbeat", 25_000)
    expect(idle.messages.slice(0, 2)).toEqual([{ type: "hello", epoch, cursor: head }, { type: "heartbeat", epoch, cursor: head }])
    idle.close()
  }, 60_000)

  it("a wrong epoch gets reset epoch_changed, then close 4409", async () => {
    for (const wrong of [epoch + 1, epoch === 0 ? 2 : epoch - 1]) {
      const feed = await open(head, wrong)
      const closed = await feed.waitForClose()
      expect(feed.messages).toEqual([{ type: "reset", reason: "epoch_changed" }])
      expect(closed.code).toBe(4409)
    }
  })

  it("a cursor beyond the head gets reset cursor_invalid, then close 4409", async () => {
    for (const beyond of [head + 1, head + 1000, 999_999_999_999_999]) {
      const feed = await open(beyond)
      const closed = await feed.waitForClose()
      expect(feed.messages).toEqual([{ type: "reset", reason: "cursor_invalid" }])
      expect(closed.code).toBe(4409)
    }
  })

  it("closed feed connections leave nothing behind (fibers, client gauge)", async () => {
    const active = () => metric(server, "effect_fibers{kind=\"active\"}")
    const baseline = await active()
    for (let i = 0; i < 20; i++) {
      const feed = await open(head)
      await feed.waitFor((ms) => ms.length >= 1, "hello")
      feed.ws.close(1000)
      await feed.waitForClose()
    }
    await eventually(async () => expect(await metric(server, "websocket_clients")).toBe(0), 10_000)
    // 20 finished sessions: the count of live fibers comes back near where it was (not +20 or +40)
    await eventually(async () => expect(await active()).toBeLessThan(baseline + 10), 10_000, 200)
  })

  /** What clients read before the restart, from two resume points. */
  let history: Array<Change> = []
  let all: Array<Change> = []

  it("shutdown (SIGTERM) closes a connected client with 1001 and the process exits cleanly", async () => {
    const before = await open(first)
    await before.waitForCursor(head)
    history = before.changes()
    before.close()
    const fromZero = await open(0)
    await fromZero.waitForCursor(head)
    all = fromZero.changes()
    fromZero.close()

    const connected = await open(head)
    await connected.waitFor((ms) => ms.length >= 1, "hello")
    let exitCode: number | null
    try {
      exitCode = await server.stop()
    } finally {
      server = await startServer({ database, env: FEED_ENV })
    }
    const closed = await connected.waitForClose()
    expect({ close: closed.code, exitCode }).toEqual({ close: 1001, exitCode: 0 })
  }, 180_000)

  it("after a restart, the epoch is kept and cursors from before it resume from the change log", async () => {
    expect(history.length).toBeGreaterThan(0)
    // the dump after the restart: same epoch, at the head
    const dump = await availableDump(server, key)
    expect(dump.res.headers["x-catalog-epoch"]).toBe(String(epoch))
    expect(dump.res.headers["x-catalog-cursor"]).toBe(String(head))
    expect(new Set(dump.body.items.map((i) => i.id))).toEqual(new Set(model.keys()))

    // nothing is in memory any more: these come from the log
    for (const [from, expected] of [[first, history], [0, all], [head - 3, history.slice(-3)]] as const) {
      const resumed = await open(from)
      await resumed.waitForCursor(head)
      expect(expectGaplessFeed(resumed.messages, epoch, from)).toBe(head)
      expect(resumed.changes()).toEqual(expected)
      resumed.close()
    }
    // and live changes flow again
    const live = await open(head)
    await live.waitFor((ms) => ms.length >= 1, "hello")
    const expected = await upsert([newItem(777)])
    await live.waitForCursor(head + 1)
    expect(expectGaplessFeed(live.messages, epoch, head)).toBe(head + 1)
    expect(live.changes()).toEqual(expected)
    head += 1
    live.close()
  }, 180_000)

  it(
    "a consumer that stops reading is closed with 4408 while another gets every change; it resumes from its last cursor with nothing lost or repeated",
    async () => {
      const fast = await open(head)
      const slow = await open(head)
      await fast.waitFor((ms) => ms.length >= 1, "hello")
      await slow.waitFor((ms) => ms.length >= 1, "hello")
      // the slow client stops reading its socket: what the server writes piles up
      const socket = (slow.ws as unknown as { _socket: Socket })._socket
      socket.pause()

      // ~32 MB of changes in 8 batches of 4 items with 1 MB image URLs
      const expected: Array<Change> = []
      for (let batch = 0; batch < 8; batch++) {
        expected.push(...await upsert(Array.from({ length: 4 }, (_, i) => newItem(1000 + batch * 4 + i, 1_000_000))))
      }
      const end = head + expected.length
      // the slow one resumes reading: it gets what was sent before its close, then the close
      socket.resume()
      await fast.waitForCursor(end, 60_000)
      const closed = await slow.waitForClose(60_000)
      expect(closed.code).toBe(4408)

      // the fast client lost nothing and was not closed
      expect(expectGaplessFeed(fast.messages, epoch, head)).toBe(end)
      expect(fast.changes()).toEqual(expected)
      expect(fast.closed).toBeUndefined()

      // what the slow client got is a gapless prefix, short of the end
      const reached = expectGaplessFeed(slow.messages, epoch, head)
      expect(reached).toBeLessThan(end)
      const got = slow.changes()
      expect(got).toEqual(expected.slice(0, got.length))

      // resuming from its last applied cursor gives exactly the rest
      const resumed = await open(reached)
      await resumed.waitForCursor(end, 60_000)
      expect(expectGaplessFeed(resumed.messages, epoch, reached)).toBe(end)
      expect([...got, ...resumed.changes()]).toEqual(expected)
      head = end
      fast.close()
      resumed.close()
    },
    180_000
  )
})
