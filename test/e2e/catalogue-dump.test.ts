/**
 * The full dump (spec 2.7, 4.2): headers as on the wire (weak ETag, Last-Modified, X-Items-Count,
 * X-Catalog-Cursor, X-Catalog-Epoch, gzip when accepted, identity JSON otherwise), 304 on a
 * matching If-None-Match, 503 FEED_NOT_READY when download capacity is exhausted; and the
 * replay property: a dump at (cursor C, epoch E) plus the feed's changes after C, applied in
 * order, equals a later dump. The dump built in pieces is in catalogue-dump-pieces.test.ts.
 */
import * as fc from "fast-check"
import { randomUUID } from "node:crypto"
import * as http from "node:http"
import * as zlib from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  applyChanges,
  deleteItem,
  eventually,
  expectedItem,
  expectGaplessFeed,
  Feed,
  type Item,
  ITEM_FIELDS,
  type ItemInput,
  itemInputArb,
  putItems,
  rawGet,
  rawRequest,
  simpleItem
} from "../support/catalogue.js"
import { ISO_UTC } from "../support/expectations.js"
import { type Dump, dumpWhere as dumpWhereOf, expectSameItems, fullDumpUrl, gzipDump, normaliseDumpItem } from "../support/full-dump.js"
import { type RunningServer, startServer } from "../support/server.js"

const SEED = Number(process.env["CATALOGUE_SEED"] ?? Date.now() % 1_000_000)

describe("catalogue full dump", () => {
  let server: RunningServer
  let key: string
  /** The live catalogue, by id. */
  const model = new Map<string, Item>()

  const dumpUrl = () => fullDumpUrl(server)
  const auth = () => ({ authorization: `Bearer ${key}` })
  const dump = () => gzipDump(server, key)
  const dumpWhere = (check: (d: Dump) => void) => dumpWhereOf(server, key, check)

  beforeAll(async () => {
    server = await startServer({
      env: {
        SIM_CATALOGUE_SIZE: "0",
        SIM_CHURN_PER_SECOND: "0",
        DUMP_INTERVAL_SECONDS: "1",
        DUMP_MAX_CONCURRENT_DOWNLOADS: "1",
        RATE_LIMIT_RPS: "100000",
        RATE_LIMIT_BURST: "100000"
      }
    })
    // startServer waits for /ready on the ops listener (database, migrations, the reconciled catalogue)
    const ready = await fetch(`${server.opsUrl}/ready`)
    expect(ready.status).toBe(200)
    key = (await server.createMerchant()).apiKey
    const inputs = fc.sample(fc.array(itemInputArb, { minLength: 60, maxLength: 60 }), { numRuns: 1, seed: SEED })[0]!
    const ids = await putItems(server, inputs)
    const distinct = new Map<string, Item>()
    inputs.forEach((input, i) => distinct.set(ids[i]!, expectedItem(input, ids[i]!)))
    for (const [id, item] of distinct) model.set(id, item)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it(`gzip: the headers of spec 4.2 and a body that decompresses to the CatalogFullDump (seed ${SEED})`, async () => {
    const d = await dumpWhere((d) => expect(d.body.items_count).toBe(model.size))
    const h = d.res.headers
    expect(h["content-type"]).toMatch(/^application\/json/)
    expect(h["x-request-id"]).toBeTruthy()
    expect(Object.keys(d.body).sort()).toEqual(["generated_at", "items", "items_count"])
    expect(d.body.generated_at).toMatch(ISO_UTC)
    // Last-Modified: the HTTP-date of the regeneration (whole seconds)
    expect(h["last-modified"]).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/)
    expect(Date.parse(h["last-modified"]!)).toBe(Math.floor(Date.parse(d.body.generated_at) / 1000) * 1000)
    expect(Number(h["x-items-count"])).toBe(model.size)
    if (h["content-length"] !== undefined) expect(Number(h["content-length"])).toBe(d.res.body.length)
    expectSameItems(d.items, model)
    // the dump at its cursor is what the live list shows
    const listed = await server.merchant(key).call((client) => client.catalogue.listItems({ urlParams: { limit: 200 } }))
    expect(new Set(listed.items.map((i) => i.id))).toEqual(new Set(model.keys()))
  })

  it("Accept-Encoding containing gzip gives gzip; without it (or with gzip;q=0) the body is identity JSON", async () => {
    const gz = await dump()
    for (const accept of ["gzip, deflate, br", "br;q=1.0, gzip;q=0.5", "GZIP"]) {
      const res = await rawGet(dumpUrl(), { ...auth(), "accept-encoding": accept })
      expect(res.status).toBe(200)
      expect(res.headers["content-encoding"], accept).toBe("gzip")
      expect(JSON.parse(zlib.gunzipSync(res.body).toString()).items_count).toBe(gz.body.items_count)
    }
    for (const accept of [undefined, "identity", "deflate, br", "gzip;q=0"]) {
      const res = await rawGet(dumpUrl(), { ...auth(), ...(accept === undefined ? {} : { "accept-encoding": accept }) })
      expect(res.status).toBe(200)
      expect([undefined, "identity"], String(accept)).toContain(res.headers["content-encoding"])
      expect(res.headers["content-type"]).toMatch(/^application\/json/)
      expect(res.body[0]).toBe("{".charCodeAt(0))
      const body = JSON.parse(res.body.toString("utf8"))
      expect(body.items_count).toBe(body.items.length)
      expect(Number(res.headers["x-items-count"])).toBe(body.items_count)
      expect(res.headers["etag"]).toMatch(/^W\/"[^"]+"$/)
      expect(res.headers["last-modified"]).toBeTruthy()
      expect(res.headers["x-catalog-cursor"]).toMatch(/^\d+$/)
      expect(res.headers["x-catalog-epoch"]).toMatch(/^\d+$/)
      if (res.headers["content-length"] !== undefined) expect(Number(res.headers["content-length"])).toBe(res.body.length)
      // the same catalogue as the gzip answer (nothing changed meanwhile)
      expectSameItems(new Map(body.items.map((i: Record<string, unknown>) => [i["id"] as string, normaliseDumpItem(i)])), gz.items)
    }
  })

  it("If-None-Match with the saved ETag gives 304 with no body, the ETag and the checkpoint headers", async () => {
    const d = await dump()
    // weak comparison (RFC 9110 13.1.2): the tag without its W/ matches too, and so does *
    for (const inm of [d.etag, `W/"nope", ${d.etag}`, d.etag.replace(/^W\//, ""), "*"]) {
      const res = await rawGet(dumpUrl(), { ...auth(), "accept-encoding": "gzip", "if-none-match": inm })
      expect(res.status).toBe(304)
      expect(res.body.length).toBe(0)
      expect(res.headers["etag"]).toBe(d.etag)
      expect(res.headers["x-catalog-cursor"]).toBe(String(d.cursor))
      expect(res.headers["x-catalog-epoch"]).toBe(String(d.epoch))
      expect(res.headers["vary"]).toBe("Accept-Encoding")
      // 200 only
      expect(res.headers["x-items-count"]).toBeUndefined()
      expect(res.headers["last-modified"]).toBeUndefined()
    }
    // another ETag is not a match
    const other = await rawGet(dumpUrl(), { ...auth(), "if-none-match": "W/\"0-0-0\"" })
    expect(other.status).toBe(200)
    expect(JSON.parse(other.body.toString()).items_count).toBe(d.body.items_count)
  })

  it("needs an API key", async () => {
    const res = await rawGet(dumpUrl(), { "accept-encoding": "gzip" })
    expect(res.status).toBe(401)
    expect(JSON.parse(res.body.toString()).error.code).toBe("MERCHANT_API_KEY_MISSING")
  })

  it("a dump at (C, E) plus the feed's changes after C, applied in order, equals a later dump", async () => {
    type Op =
      | { readonly kind: "new"; readonly input: Record<string, unknown> }
      | { readonly kind: "price"; readonly pick: number; readonly cents: number }
      | { readonly kind: "same"; readonly pick: number }
      | { readonly kind: "delete"; readonly pick: number }
      | { readonly kind: "new-then-delete"; readonly input: Record<string, unknown> }
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant("new" as const), input: itemInputArb }),
      fc.record({ kind: fc.constant("price" as const), pick: fc.nat(), cents: fc.integer({ min: 1, max: 999_999 }) }),
      fc.record({ kind: fc.constant("same" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("new-then-delete" as const), input: itemInputArb })
    )
    // each inner array is one admin batch (PUT of its upserts, then its deletes)
    const batchesArb = fc.array(fc.array(opArb, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 5 })
    let run = 0
    await fc.assert(
      fc.asyncProperty(batchesArb, async (batches) => {
        run++
        const before = await dump()
        // the previous run ended on a dump that had everything: this one is the live catalogue
        expectSameItems(before.items, model)
        for (const batch of batches) {
          const upserts: Array<Record<string, unknown>> = []
          const deletes: Array<string> = []
          const pick = (n: number) => {
            const ids = [...model.keys()].filter((id) => !deletes.includes(id)).sort()
            return ids.length === 0 ? undefined : ids[n % ids.length]
          }
          for (const op of batch) {
            if (op.kind === "new" || op.kind === "new-then-delete") {
              const id = (op.input["id"] as string | undefined) ?? randomUUID()
              if (model.has(id) || deletes.includes(id)) continue
              const input = { ...op.input, id }
              upserts.push(input)
              model.set(id, expectedItem(input as never, id))
              if (op.kind === "new-then-delete") deletes.push(id)
            } else {
              const id = pick(op.pick)
              if (id === undefined || upserts.some((u) => u["id"] === id)) continue
              const item = model.get(id)!
              if (op.kind === "price") {
                const changed = { ...item, price: op.cents / 100 }
                upserts.push(changed)
                model.set(id, changed)
              } else if (op.kind === "same") {
                upserts.push({ ...item }) // unchanged: not a change
              } else {
                deletes.push(id)
              }
            }
          }
          if (upserts.length > 0) await putItems(server, upserts as Array<ItemInput>)
          for (const id of deletes) {
            await deleteItem(server, id)
            model.delete(id)
          }
        }
        // a marker written last: a dump that has it has everything before it
        const marker = randomUUID()
        const markerItem = simpleItem(marker, 4242 + run)
        await putItems(server, [markerItem])
        model.set(marker, expectedItem(markerItem, marker))
        const after = await dumpWhere((d) => expect(d.items.has(marker)).toBe(true))
        expect(after.epoch).toBe(before.epoch)
        expect(after.cursor).toBeGreaterThan(before.cursor)
        expectSameItems(after.items, model)

        const feed = await Feed.open(server, key, before.cursor, before.epoch)
        try {
          await feed.waitForCursor(after.cursor)
          // nothing after the marker was written: the feed stops exactly at the later dump's cursor
          expect(expectGaplessFeed(feed.messages, before.epoch, before.cursor)).toBe(after.cursor)
          for (const change of feed.changes()) {
            if (change.op === "upsert") expect(Object.keys(change.item!).sort()).toEqual([...ITEM_FIELDS].sort())
          }
          const replayed = applyChanges(new Map<string, unknown>(before.items), feed.changes())
          expectSameItems(replayed, after.items)
        } finally {
          feed.close()
        }
      }),
      { numRuns: 4, seed: SEED, endOnFailure: true }
    )
  })

  it("503 FEED_NOT_READY when every download slot (DUMP_MAX_CONCURRENT_DOWNLOADS=1) is taken; the slot is freed when that download ends", async () => {
    // a catalogue big enough that a download cannot fit in socket buffers: ~24 MB of incompressible JSON
    for (let batch = 0; batch < 3; batch++) {
      const items = Array.from({ length: 8 }, (_, i) => simpleItem(randomUUID(), 100 + batch * 8 + i, "Big", 1_000_000))
      await putItems(server, items)
    }
    const big = await dumpWhere((d) => expect(d.body.items.filter((i) => i["market_hash_name"] === "Big").length).toBe(24))
    expect(big.res.body.length).toBeGreaterThan(18_000_000)

    // hold one identity download open without reading it
    const held = await new Promise<{ req: http.ClientRequest; res: http.IncomingMessage }>((resolve, reject) => {
      const req = http.get(dumpUrl(), { headers: auth(), agent: false }, (res) => {
        res.pause()
        resolve({ req, res })
      })
      req.on("error", reject)
    })
    try {
      expect(held.res.statusCode).toBe(200)
      for (const headers of [{ "accept-encoding": "gzip" }, {}] as Array<Record<string, string>>) {
        const refused = await rawGet(dumpUrl(), { ...auth(), ...headers })
        expect(refused.status).toBe(503)
        const body = JSON.parse(refused.body.toString())
        expect(body).toEqual({ error: { code: "FEED_NOT_READY", message: expect.any(String) } })
      }
      // a 304 needs no download slot
      const cached = await rawGet(dumpUrl(), { ...auth(), "if-none-match": big.etag })
      expect(cached.status).toBe(304)
    } finally {
      held.req.destroy()
    }
    // the aborted download gives its slot back
    const again = await eventually(async () => {
      const res = await rawGet(dumpUrl(), { ...auth(), "accept-encoding": "gzip" })
      expect(res.status).toBe(200)
      return res
    })
    expect(JSON.parse(zlib.gunzipSync(again.body).toString()).items_count).toBe(big.body.items_count)
    // and a complete download gives it back too
    expect((await rawGet(dumpUrl(), { ...auth() })).status).toBe(200)
    expect((await rawGet(dumpUrl(), { ...auth() })).status).toBe(200)
    // a HEAD has the download's headers and no body, and gives its slot back (the platform never
    // runs the body of a HEAD: the slot leaked, and after DUMP_MAX_CONCURRENT_DOWNLOADS of them
    // every download was 503 for good)
    for (let i = 0; i < 3; i++) {
      const head = await rawRequest("HEAD", dumpUrl(), { ...auth(), "accept-encoding": "gzip" })
      expect([head.status, head.headers["etag"], head.headers["content-encoding"], head.body.length]).toEqual([200, big.etag, "gzip", 0])
    }
    // A HEAD's Content-Length is its build's gzip length. The dump is rebuilt every second here,
    // and a rebuild at the same cursor keeps the (weak) ETag while its gzip length may differ by a
    // few bytes (generated_at is deflated anew), so the HEAD is compared with a download of the
    // same build: the same Last-Modified (builds are at least a second apart).
    await eventually(async () => {
      const head = await rawRequest("HEAD", dumpUrl(), { ...auth(), "accept-encoding": "gzip" })
      const res = await rawGet(dumpUrl(), { ...auth(), "accept-encoding": "gzip" })
      expect([head.status, res.status]).toEqual([200, 200])
      expect(res.headers["last-modified"]).toBe(head.headers["last-modified"])
      expect(Number(head.headers["content-length"])).toBe(res.body.length)
      expect(JSON.parse(zlib.gunzipSync(res.body).toString()).items_count).toBe(big.body.items_count)
    }, 10_000)
  })
})
