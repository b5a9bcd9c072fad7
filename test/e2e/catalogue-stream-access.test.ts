/**
 * Who may read the realtime catalogue feed (CONTRACT 3; spec 7): HTTP 400 before the upgrade for a
 * missing, malformed or repeated cursor or epoch and for an upgrade request that is not WebSocket 13,
 * 401 without a valid key, 403 for a blocked merchant while an inactive one may still read, and an
 * open feed closed with 1008 once its key is revoked or its merchant blocked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { availableDump, Feed, FEED_ENV, feedUrl, rawRequest, refusedUpgrade } from "../support/catalogue.js"
import { type RunningServer, setMerchantStatus, startServer } from "../support/server.js"

describe("catalogue realtime feed: access", () => {
  let server: RunningServer
  let key: string
  let epoch: number
  /** The log's head: nothing changes the catalogue here. */
  let head: number
  const feeds: Array<Feed> = []

  beforeAll(async () => {
    server = await startServer({ env: FEED_ENV })
    key = (await server.createMerchant()).apiKey
    const dump = await availableDump(server, key)
    epoch = dump.epoch
    head = dump.cursor
  })
  afterAll(async () => {
    for (const feed of feeds) feed.close()
    await server?.stop()
  })

  it("an open feed is closed with 1008 when its key is revoked or its merchant blocked; an inactive merchant's feed and other merchants' feeds go on", async () => {
    const [rotated, blocked, inactive, bystander] = await Promise.all([1, 2, 3, 4].map(() => server.createMerchant()))
    const opened = await Promise.all([rotated, blocked, inactive, bystander].map(async (m) => {
      const feed = await Feed.open(server, m.apiKey, head, epoch)
      feeds.push(feed)
      await feed.waitFor((ms) => ms.length >= 1, "hello")
      return feed
    }))
    const [rotatedFeed, blockedFeed, inactiveFeed, bystanderFeed] = opened as [Feed, Feed, Feed, Feed]
    await server.adminApi.call((client) => client.merchants.rotateApiKey({ path: { id: rotated.id } }))
    expect(await rotatedFeed.waitForClose(10_000)).toEqual({ code: 1008, reason: "api key revoked" })
    await setMerchantStatus(server, inactive.id, "inactive")
    await setMerchantStatus(server, blocked.id, "blocked")
    expect(await blockedFeed.waitForClose(10_000)).toEqual({ code: 1008, reason: "merchant blocked" })
    // the inactive merchant changed before the blocked one and may still read; the bystander never changed
    expect([inactiveFeed.closed, bystanderFeed.closed]).toEqual([undefined, undefined])
    for (const feed of [inactiveFeed, bystanderFeed]) expect(feed.messages[0]).toEqual({ type: "hello", epoch, cursor: head })
    inactiveFeed.close()
    bystanderFeed.close()
  })

  it("a missing, malformed or repeated cursor or epoch is HTTP 400 MERCHANT_INVALID_QUERY before the upgrade", async () => {
    const auth = { authorization: `Bearer ${key}` }
    for (
      const query of [
        "",
        `?epoch=${epoch}`,
        `?cursor=${head}`,
        `?cursor=abc&epoch=${epoch}`,
        `?cursor=-1&epoch=${epoch}`,
        `?cursor=1.5&epoch=${epoch}`,
        `?cursor=1e3&epoch=${epoch}`,
        `?cursor=&epoch=${epoch}`,
        `?cursor=${head}&epoch=x`,
        `?cursor=${head}&epoch=`,
        `?cursor=${head}&epoch=-${epoch}`,
        `?cursor=${head}&cursor=0&epoch=${epoch}`,
        `?cursor=${head}&epoch=${epoch}&epoch=${epoch}`
      ]
    ) {
      const res = await refusedUpgrade(server, query, auth)
      expect({ query, status: res.status, body: res.json }).toEqual({
        query,
        status: 400,
        body: { error: { code: "MERCHANT_INVALID_QUERY", message: expect.any(String) } }
      })
      expect(res.headers["content-type"]).toMatch(/^application\/json/)
    }
  })

  it("an upgrade request without a valid Sec-WebSocket-Key or version 13 is 400 MERCHANT_INVALID_QUERY in the Error shape", async () => {
    const base = { authorization: `Bearer ${key}`, connection: "Upgrade", upgrade: "websocket" }
    const validKey = "dGhlIHNhbXBsZSBub25jZQ=="
    for (
      const headers of [
        { ...base, "sec-websocket-version": "13" },
        { ...base, "sec-websocket-version": "13", "sec-websocket-key": "short" },
        { ...base, "sec-websocket-key": validKey },
        { ...base, "sec-websocket-version": "8", "sec-websocket-key": validKey }
      ]
    ) {
      const res = await rawRequest("GET", feedUrl(server, `?cursor=${head}&epoch=${epoch}`).replace(/^ws/, "http"), headers)
      expect({ status: res.status, type: res.headers["content-type"], body: JSON.parse(res.body.toString()) })
        .toEqual({
          status: 400,
          type: expect.stringMatching(/^application\/json/),
          body: { error: { code: "MERCHANT_INVALID_QUERY", message: expect.any(String) } }
        })
    }
  })

  it("no key or an invalid key is HTTP 401 before the upgrade", async () => {
    for (const headers of [{}, { authorization: "Bearer nope" }, { authorization: `Basic ${key}` }, { authorization: key }] as Array<Record<string, string>>) {
      const res = await refusedUpgrade(server, `?cursor=${head}&epoch=${epoch}`, headers)
      expect({ status: res.status, body: res.json }).toEqual({
        status: 401,
        body: { error: { code: "MERCHANT_API_KEY_MISSING", message: expect.any(String) } }
      })
    }
  })

  it("a blocked merchant gets 403 MERCHANT_BLOCKED before the upgrade; an inactive one may still read the feed", async () => {
    const other = await server.createMerchant()
    await setMerchantStatus(server, other.id, "blocked")
    const refused = await refusedUpgrade(server, `?cursor=${head}&epoch=${epoch}`, { authorization: `Bearer ${other.apiKey}` })
    expect({ status: refused.status, body: refused.json }).toEqual({ status: 403, body: { error: { code: "MERCHANT_BLOCKED", message: expect.any(String) } } })
    await setMerchantStatus(server, other.id, "inactive")
    const feed = await Feed.open(server, other.apiKey, head, epoch)
    feeds.push(feed)
    await feed.waitFor((ms) => ms.length >= 1, "hello")
    expect(feed.messages[0]).toEqual({ type: "hello", epoch, cursor: head })
    feed.close()
  })
})
