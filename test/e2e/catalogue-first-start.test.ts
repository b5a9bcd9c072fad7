/**
 * The first start on an empty database: the supplier's first reconciliation writes the whole
 * catalogue, and the engine loads it whole once that has ended instead of applying its changes one
 * by one (docs/decisions/0025-first-start-and-the-catalogue-load.md). A feed client that connected
 * before then loses nothing: followed from its last cursor whenever the server closes it, it ends
 * with exactly the catalogue of the dump, through gapless changes.
 *
 * The feed's case is PostgreSQL only: on the embedded database, one session, every request (the
 * merchant's creation, /metrics, the feed's authentication) waits for the reconciliation's
 * transactions, so a client cannot be placed inside that window on purpose.
 *
 * And /ready does not wait for the first dump: a download asked for before it is built waits for
 * it instead of answering 503 (docs/decisions/0023-start-up-before-the-index-loads.md).
 */
import { afterAll, expect, it } from "vitest"
import { applyChanges, availableDump, eventually, expectGaplessFeed, Feed, metric, rawGet } from "../support/catalogue.js"
import { type RunningServer, startServer } from "../support/server.js"

// enough items that the reconciliation is still writing when the client connects (seconds of it,
// against the few hundred milliseconds from /health to the client's hello)
const SIZE = 60_000
const ENV = { SIM_CATALOGUE_SIZE: String(SIZE), SIM_CHURN_PER_SECOND: "0", DUMP_INTERVAL_SECONDS: "1", RATE_LIMIT_RPS: "100000", RATE_LIMIT_BURST: "100000" }

let server: RunningServer | undefined
const feeds: Array<Feed> = []
afterAll(async () => {
  for (const feed of feeds) feed.close()
  await server?.stop()
})

it.runIf(!!process.env["DATABASE_URL"])(
  "a feed client connected before the first reconciliation ends follows it to the dump's catalogue, losing nothing",
  async () => {
    server = await startServer({ env: ENV, waitFor: "health" })
    const running = server
    const key = (await running.createMerchant()).apiKey
    // the engine's first load (of the empty catalogue) gives the epoch
    const epoch = await eventually(async () => {
      const value = await metric(running, "catalogue_epoch")
      expect(value).toBeGreaterThan(0)
      return value
    })
    let feed = await Feed.open(running, key, 0, epoch)
    feeds.push(feed)
    await feed.waitFor((ms) => ms.length >= 1, "hello")
    expect(feed.messages[0]).toEqual({ type: "hello", epoch, cursor: 0 })
    // connected before the catalogue is ready: the reconciliation was not over
    // connected while the reconciliation was still writing: the engine had not loaded it yet
    expect((await fetch(`${running.opsUrl}/ready`)).status).toBe(503)
    expect(await metric(running, "catalogue_cursor"), "the engine's cursor when the client was live").toBe(0)

    const dump = await availableDump(running, key, 120_000)
    expect(dump.epoch).toBe(epoch)
    const head = dump.cursor
    const dumped = dump.body
    expect(dumped.items_count).toBe(SIZE)

    // follow the feed to the dump's cursor, resuming from the last applied cursor after any close
    const items = new Map<string, unknown>()
    let from = 0
    for (let session = 1;; session++) {
      expect(session, "sessions needed to reach the head").toBeLessThanOrEqual(5)
      const reached = await feed.waitForCursor(head, 60_000).then(() => true, (error) => {
        if (feed.closed === undefined) throw error
        return false
      })
      // no churn: nothing is logged after the reconciliation, so the head is the last cursor there is
      const applied = expectGaplessFeed(feed.messages, epoch, from)
      applyChanges(items, feed.changes())
      if (reached) {
        expect(applied).toBe(head)
        break
      }
      feed.close()
      from = applied
      feed = await Feed.open(running, key, from, epoch)
      feeds.push(feed)
    }
    expect(items.size).toBe(SIZE)
    const byId = new Map(dumped.items.map((item) => [item.id, item]))
    for (const [id, item] of items) expect(item, id).toEqual(byId.get(id))
  },
  180_000
)

it("a dump download asked for right after start-up, before the first dump is built, waits for it and answers 200 with the whole catalogue", async () => {
  const size = 20_000
  const started = await startServer({ env: { ...ENV, SIM_CATALOGUE_SIZE: String(size), DUMP_INTERVAL_SECONDS: "3600" }, waitFor: "health" })
  try {
    const key = (await started.createMerchant()).apiKey
    // one request, not a poll, sent during the reconciliation on PostgreSQL (on PGlite the merchant's
    // creation may wait for it), before the dump's build in any case: it used to answer 503
    // FEED_NOT_READY until the first build
    const res = await rawGet(`${started.baseUrl}/api/v1/merchant/items/full-dump`, { authorization: `Bearer ${key}` })
    expect(res.status, res.body.toString().slice(0, 300)).toBe(200)
    expect(Number(res.headers["x-items-count"])).toBe(size)
    expect((JSON.parse(res.body.toString()) as { items_count: number }).items_count).toBe(size)
  } finally {
    await started.stop()
  }
}, 120_000)
