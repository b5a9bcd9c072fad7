/**
 * GET /items and GET /items/search (spec 2.6, 4.2, 7, 8; CONTRACT 6) against a naive model, on a
 * catalogue of ~300 generated items loaded through PUT /admin/catalogue/items: random filters,
 * sorts and limits; a cursor walk returns every match exactly once, in order, also while items
 * change; items round-trip exactly with every field present and nothing else; deletion. How the
 * query itself is read and refused is in catalogue-query-parameters.test.ts.
 */
import * as fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ItemPage, type SearchParams, SearchResults } from "../../src/Catalogue/Api.js"
import {
  byPriceId,
  floatBoundArb,
  listParams,
  listQueryArb,
  type ListUrlParams,
  matches,
  priceBoundArb,
  queryString,
  sometimes
} from "../support/catalogue-query-model.js"
import { deleteItem, eventually, expectedItem, expectItemShape, type Item, itemInputArb, NAMES, putItems } from "../support/catalogue.js"
import { bodyOf, objectOf } from "../support/expectations.js"
import { type RunningServer, startServer } from "../support/server.js"

const SEED = Number(process.env["CATALOGUE_SEED"] ?? Date.now() % 1_000_000)

describe("catalogue list and search", () => {
  let server: RunningServer
  let key: string
  /** The live catalogue as the API must show it, by id. */
  const model = new Map<string, Item>()

  /** Raw GET: for query text the typed client cannot write (numbers as written, bad values) and for statuses. */
  const get = (path: string) => server.api(path, { key })

  /** GET /items through the typed client (valid parameters): the decoded page, or a rejection. */
  const listItems = (urlParams: ListUrlParams) => server.merchant(key).call((client) => client.catalogue.listItems({ urlParams }))

  /** GET /items/search through the typed client (valid parameters). */
  const searchItems = (urlParams: typeof SearchParams.Type) => server.merchant(key).call((client) => client.catalogue.searchItems({ urlParams }))

  /** Walks next_cursor to the end, a page read by `page`; every page checked for shape and size. */
  const walkPages = async (page: (cursor: string | undefined) => Promise<{ items: ReadonlyArray<Item>; next_cursor: string | null }>, limit: number) => {
    const seen: Array<Item> = []
    let cursor: string | undefined
    for (let pages = 0;; pages++) {
      expect(pages).toBeLessThanOrEqual(model.size + 1)
      const body = await page(cursor)
      expect(Object.keys(body).sort()).toEqual(["items", "next_cursor"])
      for (const item of body.items) expectItemShape(item)
      seen.push(...body.items)
      if (body.next_cursor === null) {
        expect(body.items.length).toBeLessThanOrEqual(limit)
        return seen
      }
      expect(typeof body.next_cursor).toBe("string")
      expect(body.items.length).toBe(limit)
      cursor = body.next_cursor
    }
  }

  /** The walk through the typed client (valid parameters). */
  const walk = (urlParams: ListUrlParams, limit: number) =>
    walkPages((cursor) => listItems({ ...urlParams, ...(cursor !== undefined ? { cursor } : {}) }), limit)

  /** The walk with the query written as text (price bounds in any of their spellings, ignored delivery types). */
  const walkRaw = (params: Record<string, string | number | undefined>, limit: number) =>
    walkPages(async (cursor) => {
      const res = await get(`/items${queryString({ ...params, cursor })}`)
      expect(res.status, res.text).toBe(200)
      return bodyOf(res, ItemPage)
    }, limit)

  beforeAll(async () => {
    server = await startServer({
      env: { SIM_CATALOGUE_SIZE: "0", SIM_CHURN_PER_SECOND: "0", RATE_LIMIT_RPS: "100000", RATE_LIMIT_BURST: "100000" }
    })
    key = (await server.createMerchant()).apiKey
    // ~300 generated items, in three loads (duplicate names, shared prices, null floats, both
    // delivery types, the three sticker coverages, asset ids beyond 2^53, has_stickers with [])
    const inputs = fc.sample(fc.array(itemInputArb, { minLength: 300, maxLength: 300 }), { numRuns: 1, seed: SEED })[0]!
    // ids are unique (a repeated id would be one item, its last write)
    const unique = inputs.filter((input, i) => input["id"] === undefined || inputs.findIndex((o) => o["id"] === input["id"]) === i)
    for (let i = 0; i < unique.length; i += 100) {
      const batch = unique.slice(i, i + 100)
      const ids = await putItems(server, batch)
      batch.forEach((input, j) => {
        if (input["id"] !== undefined) expect(ids[j]).toBe(input["id"])
        model.set(ids[j]!, expectedItem(input, ids[j]!))
      })
    }
    // the catalogue applies the change log asynchronously: wait until everything is listed
    await eventually(async () => expect((await walk({ limit: 200 }, 200)).length).toBe(model.size))
  })
  afterAll(async () => {
    await server?.stop()
  })

  it(`the generated catalogue has what the properties need (seed ${SEED})`, () => {
    const items = Array.from(model.values())
    expect(items.length).toBeGreaterThanOrEqual(290)
    expect(items.some((i) => i.float === null)).toBe(true)
    expect(items.some((i) => i.delivery_type === "instant") && items.some((i) => i.delivery_type === "manual")).toBe(true)
    expect(items.some((i) => i.asset_id !== null && BigInt(i.asset_id) > 2n ** 53n)).toBe(true)
    expect(items.some((i) => i.has_stickers && i.stickers.length === 0)).toBe(true)
    expect(items.some((i) => i.stickers.some((s) => s.sticker_id === null && s.wear === null && s.image_url === null))).toBe(true)
    expect(items.some((i) => i.stickers.some((s) => s.sticker_id !== null))).toBe(true)
    expect(new Set(items.map((i) => i.market_hash_name)).size).toBeLessThan(items.length)
    expect(new Set(items.map((i) => i.price)).size).toBeLessThan(items.length)
    expect(items.some((i) => i.price !== Math.trunc(i.price))).toBe(true)
  })

  it("without filters, a walk in both orders returns every item once, sorted by (price, id), values exact", async () => {
    const asc = Array.from(model.values()).sort(byPriceId)
    expect(await walk({}, 50)).toEqual(asc)
    expect(await walk({ sort: "price_desc", limit: 7 }, 7)).toEqual([...asc].reverse())
  })

  it("random filters, sort and limit: the cursor walk returns exactly the model's matches, in order, once each", async () => {
    await fc.assert(
      fc.asyncProperty(listQueryArb, async (q) => {
        const expected = Array.from(model.values()).filter((i) => matches(i, q)).sort(byPriceId)
        if (q.sort === "price_desc") expected.reverse()
        // raw: the bounds are sent as written (12.5, 12.50, 12.500), which the typed client would rewrite
        const got = await walkRaw(listParams(q), q.limit ?? 50)
        expect(got.map((i) => i.id)).toEqual(expected.map((i) => i.id))
        expect(got).toEqual(expected)
      }),
      { numRuns: 30, seed: SEED }
    )
  })

  it("search: exact, case-sensitive name; max_price, float bounds, delivery; price ascending; limit 1..50, default 10", async () => {
    const searchArb = fc.record({
      market_hash_name: fc.constantFrom(...NAMES, "ak-47 | Redline (Field-Tested)", "AK-47 | Redline", "No Such Item"),
      max_price: sometimes(priceBoundArb),
      min_float: sometimes(floatBoundArb),
      max_float: sometimes(floatBoundArb),
      delivery_type: sometimes(fc.constantFrom("instant", "manual", "unknown")),
      limit: sometimes(fc.integer({ min: 1, max: 50 }), 1)
    })
    await fc.assert(
      fc.asyncProperty(searchArb, async (q) => {
        const expected = Array.from(model.values()).filter((i) => matches(i, { ...q, min_price: undefined })).sort(byPriceId).slice(0, q.limit ?? 10)
        // raw: max_price is sent as written (see the list property)
        const res = await get(`/items/search${queryString({ ...q, max_price: q.max_price?.text })}`)
        expect(res.status, res.text).toBe(200)
        expect(Object.keys(objectOf(res))).toEqual(["results"])
        const { results } = bodyOf(res, SearchResults)
        for (const item of results) expectItemShape(item)
        expect(results).toEqual(expected)
      }),
      { numRuns: 40, seed: SEED }
    )
  })

  it("a cursor stays valid while items change (keyset): unchanged items are neither skipped nor repeated", async () => {
    const items = Array.from(model.values()).sort(byPriceId)
    const first = await listItems({ limit: 20 })
    expect(first.items).toEqual(items.slice(0, 20))
    // after the first page: its last item moves to the end, an item after the cursor is deleted,
    // another one after the cursor gets cheaper (moves before it), and a cheap new item appears
    const last = items[19]!
    const gone = items[40]!
    const cheaper = items[60]!
    const cheap = expectedItem({ market_hash_name: "Cheap", price: 0.01, delivery_type: "instant" }, "00000000-0000-4000-8000-000000000001")
    await putItems(server, [{ ...last, price: 99_999.99 }, { ...cheaper, price: 0.01 }, { ...cheap }])
    await deleteItem(server, gone.id)
    model.set(last.id, { ...last, price: 99_999.99 })
    model.set(cheaper.id, { ...cheaper, price: 0.01 })
    model.set(cheap.id, cheap)
    model.delete(gone.id)
    await eventually(async () => expect(await walk({ limit: 200 }, 200)).toEqual(Array.from(model.values()).sort(byPriceId)))
    const rest: Array<Item> = []
    let cursor: string | null = first.next_cursor
    while (cursor !== null) {
      const page: { items: ReadonlyArray<Item>; next_cursor: string | null } = await listItems({ limit: 33, cursor })
      rest.push(...page.items)
      cursor = page.next_cursor
    }
    // exactly the items after the first page's last (price, id), as they are now
    const after = Array.from(model.values()).sort(byPriceId).filter((i) => byPriceId(i, last) > 0)
    expect(rest).toEqual(after)
    const ids = rest.map((i) => i.id)
    expect(ids).toContain(last.id) // moved past the cursor: seen again, at its new price
    expect(ids).not.toContain(gone.id)
    // the one that got cheaper is seen only if it still sorts after the cursor
    expect(ids.includes(cheaper.id)).toBe(byPriceId(model.get(cheaper.id)!, last) > 0)
    expect(ids).not.toContain(cheap.id)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("a deleted item disappears from list and search", async () => {
    const victim = Array.from(model.values()).find((i) => i.market_hash_name === NAMES[3])!
    await deleteItem(server, victim.id)
    model.delete(victim.id)
    await eventually(async () => {
      const search = await searchItems({ market_hash_name: victim.market_hash_name, limit: 50 })
      expect(search.results.map((i) => i.id)).not.toContain(victim.id)
    })
    const listed = await walk({ market_hash_name: victim.market_hash_name, limit: 200 }, 200)
    expect(listed).toEqual(Array.from(model.values()).filter((i) => i.market_hash_name === victim.market_hash_name).sort(byPriceId))
    const whole = await walk({ limit: 200 }, 200)
    expect(whole.map((i) => i.id)).not.toContain(victim.id)
    expect(whole.length).toBe(model.size)
    // deleting it again: it is no longer an active item
    const again = await server.admin(`/admin/catalogue/items/${victim.id}`, { method: "DELETE" })
    expect(again.status).toBe(404)
  })

  it("delivery_type=unknown is ignored: the same answer as without it", async () => {
    const plain = await walk({ limit: 200 }, 200)
    expect(await walk({ limit: 200, delivery_type: "unknown" }, 200)).toEqual(plain)
    const name = NAMES[1]
    const search = await searchItems({ market_hash_name: name })
    expect(await searchItems({ market_hash_name: name, delivery_type: "unknown" })).toEqual(search)
  })

  it("DELETE with the item's uuid in upper case delists it (204, gone from list and search)", async () => {
    const victim = Array.from(model.values()).find((i) => i.market_hash_name === NAMES[4])!
    const del = await server.admin(`/admin/catalogue/items/${victim.id.toUpperCase()}`, { method: "DELETE" })
    expect(del.status, del.text).toBe(204)
    model.delete(victim.id)
    await eventually(async () => {
      const search = await searchItems({ market_hash_name: victim.market_hash_name, limit: 50 })
      expect(search.results.map((i) => i.id)).not.toContain(victim.id)
    }, 10_000)
  })

  // last: it adds an item the model does not know
  it("an item id given in upper case is still that uuid: the item is listed and can be deleted (or the input is refused with 400)", async () => {
    const upper = "3F1C2B9A-8D7E-4C6B-9A5F-0E1D2C3B4A59"
    const name = "Upper Case Id"
    const res = await server.admin("/admin/catalogue/items", {
      method: "PUT",
      body: { items: [{ id: upper, market_hash_name: name, price: 1.5, delivery_type: "instant" }] }
    })
    if (res.status === 400) return
    expect(res.status, res.text).toBe(200)
    const found = await eventually(async () => {
      const search = await searchItems({ market_hash_name: name })
      expect(search.results.map((i) => i.id.toLowerCase())).toEqual([upper.toLowerCase()])
      return search.results[0]!
    }, 10_000)
    // the typed call resolves on the declared 204 only
    await deleteItem(server, found.id)
    await eventually(async () => expect((await searchItems({ market_hash_name: name })).results).toEqual([]), 10_000)
  })
})
