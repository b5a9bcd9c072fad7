/**
 * GET /items and GET /items/search (spec 2.6, 4.2, 7, 8; CONTRACT 6) against a naive model, on a
 * catalogue of ~300 generated items loaded through PUT /admin/catalogue/items: random filters,
 * sorts and limits; a cursor walk returns every match exactly once, in order; items round-trip
 * exactly with every field present and nothing else; the error cases; deletion.
 */
import { Schema } from "effect"
import * as fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ItemPage, type ListParams, type SearchParams, SearchResults } from "../../src/Catalogue/Api.js"
import { CatalogueItems } from "../../src/Ops/AdminApi.js"
import {
  CATEGORIES,
  deleteItem,
  eventually,
  expectedItem,
  expectItemShape,
  EXTERIORS,
  type Item,
  itemInputArb,
  NAMES,
  putItems,
  RARITIES
} from "../support/catalogue.js"
import { bodyOf, codeOf, expectError, objectOf } from "../support/expectations.js"
import { type RunningServer, startServer } from "../support/server.js"

const SEED = Number(process.env["CATALOGUE_SEED"] ?? Date.now() % 1_000_000)

// ---- the model -----------------------------------------------------------------------------------

const cents = (item: Item) => Math.round(item.price * 100)
const byPriceId = (a: Item, b: Item) => cents(a) - cents(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** A USD query bound, written from an exact number of mills (tenths of a cent). */
interface PriceBound {
  readonly mills: number
  readonly text: string
}
const priceBoundArb: fc.Arbitrary<PriceBound> = fc.oneof(
  fc.integer({ min: 0, max: 10_000_000_0 }),
  // near the common prices: exactly on them and a mill either side
  fc.constantFrom(10, 990, 1000, 2500, 19990, 1_000_000).chain((m) => fc.constantFrom(m - 1, m, m + 1))
).chain((mills) => {
  const whole = Math.floor(mills / 1000)
  const frac = String(mills % 1000).padStart(3, "0")
  const texts = [`${whole}.${frac}`]
  if (mills % 10 === 0) texts.push(`${whole}.${frac.slice(0, 2)}`)
  if (mills % 1000 === 0) texts.push(String(whole))
  return fc.constantFrom(...texts).map((text) => ({ mills, text }))
})

const floatBoundArb = fc.oneof(fc.constantFrom(0, 0.07, 0.15, 0.5, 1), fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (x === 0 ? 0 : x)))

const sometimes = <A>(arb: fc.Arbitrary<A>, weight = 3) => fc.oneof({ weight, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb })

interface ListQuery {
  readonly market_hash_name?: string | undefined
  readonly min_price?: PriceBound | undefined
  readonly max_price?: PriceBound | undefined
  readonly category?: string | undefined
  readonly exterior?: string | undefined
  readonly rarity?: string | undefined
  readonly min_float?: number | undefined
  readonly max_float?: number | undefined
  readonly delivery_type?: string | undefined
  readonly sort?: "price_asc" | "price_desc" | undefined
  readonly limit?: number | undefined
}

const listQueryArb: fc.Arbitrary<ListQuery> = fc.record({
  market_hash_name: sometimes(fc.constantFrom(...NAMES, "No Such Item")),
  min_price: sometimes(priceBoundArb),
  max_price: sometimes(priceBoundArb),
  category: sometimes(fc.constantFrom(...CATEGORIES, "gloves")),
  exterior: sometimes(fc.constantFrom(...EXTERIORS.map((e) => e[0]), "Well-Worn")),
  rarity: sometimes(fc.constantFrom(...RARITIES.map((r) => r[0]), "Contraband")),
  min_float: sometimes(floatBoundArb),
  max_float: sometimes(floatBoundArb),
  // unknown values are ignored (spec 4.2)
  delivery_type: sometimes(fc.constantFrom("instant", "manual", "unknown", "INSTANT", "")),
  sort: sometimes(fc.constantFrom("price_asc" as const, "price_desc" as const), 1),
  limit: sometimes(fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 12 })), 1)
})

const matches = (item: Item, q: Omit<ListQuery, "sort" | "limit">) =>
  (q.market_hash_name === undefined || item.market_hash_name === q.market_hash_name) &&
  (q.min_price === undefined || cents(item) * 10 >= q.min_price.mills) &&
  (q.max_price === undefined || cents(item) * 10 <= q.max_price.mills) &&
  (q.category === undefined || item.category === q.category) &&
  (q.exterior === undefined || item.exterior === q.exterior) &&
  (q.rarity === undefined || item.rarity === q.rarity) &&
  (q.min_float === undefined || (item.float !== null && item.float >= q.min_float)) &&
  (q.max_float === undefined || (item.float !== null && item.float <= q.max_float)) &&
  (q.delivery_type !== "instant" && q.delivery_type !== "manual" ? true : item.delivery_type === q.delivery_type)

const queryString = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) search.set(k, String(v))
  const s = search.toString()
  return s === "" ? "" : `?${s}`
}

/** The typed client's query of GET /items (its decoded Type). */
type ListUrlParams = typeof ListParams.Type

const listParams = (q: ListQuery) => ({
  market_hash_name: q.market_hash_name,
  min_price: q.min_price?.text,
  max_price: q.max_price?.text,
  category: q.category,
  exterior: q.exterior,
  rarity: q.rarity,
  min_float: q.min_float,
  max_float: q.max_float,
  delivery_type: q.delivery_type,
  sort: q.sort,
  limit: q.limit
})

// ---- the test --------------------------------------------------------------------------------------

describe("catalogue list and search", () => {
  let server: RunningServer
  let key: string
  /** The live catalogue as the API must show it, by id. */
  const model = new Map<string, Item>()

  /** Raw GET: for query text the typed client cannot write (numbers as written, bad values) and for statuses. */
  const get = (path: string) => server.api(path, { key })

  /** The items of a raw GET /items whose answer must be an ItemPage (query text as written). */
  const itemsOf = async (path: string) => bodyOf(await get(path), ItemPage).items

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

  it("limit 0, 201, abc, 1.5 or a bad filter value (a negative price bound too) give 400 MERCHANT_INVALID_QUERY", async () => {
    for (
      const q of [
        "limit=0",
        "limit=201",
        "limit=abc",
        "limit=1.5",
        "limit=-1",
        "min_float=2",
        "max_float=-0.1",
        "min_float=abc",
        "min_price=abc",
        "max_price=x1",
        "min_price=-1",
        "max_price=-0.01"
      ]
    ) {
      expectError(await get(`/items?${q}`), 400, "MERCHANT_INVALID_QUERY")
    }
    // the bounds themselves are fine
    for (const q of ["limit=1", "limit=200", "min_float=0", "max_float=1", "min_price=0", "max_price=0"]) expect((await get(`/items?${q}`)).status).toBe(200)
  })

  it("numbers are read strictly: hex, signs, spaces, and exponents in a limit, are 400 MERCHANT_INVALID_QUERY on every list", async () => {
    const name = encodeURIComponent(NAMES[0])
    for (
      const path of [
        "/items?limit=0x10",
        "/items?limit=1e2",
        "/items?limit=%2B5",
        "/items?limit=%2010%20",
        "/items?limit=10.0",
        "/items?limit=0b11",
        "/items?min_price=0x10",
        "/items?max_price=%201",
        "/items?min_price=%2B1",
        "/items?min_float=-0",
        "/items?max_float=.5",
        `/items/search?market_hash_name=${name}&limit=0x5`,
        `/items/search?market_hash_name=${name}&max_price=0b1`,
        "/purchases?limit=1e1",
        "/deposits?limit=0x10",
        "/webhook-events?limit=%2B5"
      ]
    ) {
      const res = await get(path)
      expect({ path, status: res.status, code: codeOf(res) }).toEqual({ path, status: 400, code: "MERCHANT_INVALID_QUERY" })
    }
    // a decimal may be written as JSON (and JavaScript's String) writes it: 1e-7
    for (const path of ["/items?limit=010", "/items?min_price=0.50&max_price=1e2", "/items?min_float=1e-7&max_float=1.0", "/purchases?limit=200"]) {
      expect({ path, status: (await get(path)).status }).toEqual({ path, status: 200 })
    }
  })

  it("price bounds compare with prices exactly as written, past what a double holds", async () => {
    const [template] = (await listItems({ limit: 1 })).items
    const payload = Schema.decodeUnknownSync(CatalogueItems)({
      items: [{ ...template, id: undefined, market_hash_name: "Exact Cent Probe", price: 0.01 }]
    })
    const created = await server.adminApi.call((client) => client.catalogue.upsertItems({ payload }))
    const name = encodeURIComponent("Exact Cent Probe")
    const ids = async (query: string) => (await itemsOf(`/items?market_hash_name=${name}&${query}`)).map((i) => i.price)
    expect(await ids("min_price=0.01&max_price=0.01")).toEqual([0.01])
    expect(await ids("min_price=0.0100000000000000000001")).toEqual([])
    expect(await ids("max_price=0.0099999999999999999999")).toEqual([])
    expect(await ids("min_price=0.0099999999999999999999&max_price=0.0100000000000000000000")).toEqual([0.01])
    const searched = await get(`/items/search?market_hash_name=${name}&max_price=0.0099999999999999999999`)
    expect(bodyOf(searched, SearchResults).results).toEqual([])
    await deleteItem(server, created.ids[0]!)
  })

  it("a bound written in many digits is read as the same value written with an exponent (it was refused past 15 digits)", async () => {
    const long = `1${"0".repeat(16)}`
    const tiny = `0.${"0".repeat(40)}1`
    for (const [written, exponent] of [[long, "1e16"], [tiny, "1e-41"]] as const) {
      const a = await get(`/items?limit=3&max_price=${written}&min_float=${tiny}`)
      expect({ written, status: a.status }).toEqual({ written, status: 200 })
      expect(bodyOf(a, ItemPage).items).toEqual(await itemsOf(`/items?limit=3&max_price=${exponent}&min_float=1e-41`))
    }
    expect(await itemsOf(`/items?max_price=${tiny}`)).toEqual([])
    // an integer past its bounds fails on the bounds, however it is written
    for (const limit of [`5${"0".repeat(20)}`, "00000000000000000201"]) expectError(await get(`/items?limit=${limit}`), 400, "MERCHANT_INVALID_QUERY")
    expect(await itemsOf("/items?limit=00000000000000000003")).toHaveLength(3)
  })

  it("a price bound that is not a finite number (NaN, Infinity, 1e400) gives 400 MERCHANT_INVALID_QUERY, not 500", async () => {
    const name = encodeURIComponent(NAMES[0])
    for (
      const path of [
        "/items?min_price=NaN",
        "/items?max_price=NaN",
        "/items?min_price=Infinity",
        "/items?max_price=Infinity",
        "/items?min_price=-Infinity",
        "/items?max_price=1e400",
        `/items/search?market_hash_name=${name}&max_price=NaN`,
        `/items/search?market_hash_name=${name}&max_price=Infinity`
      ]
    ) {
      const res = await get(path)
      expect({ path, status: res.status, code: codeOf(res) }).toEqual({ path, status: 400, code: "MERCHANT_INVALID_QUERY" })
    }
  })

  it("sort=foo gives 400 MERCHANT_INVALID_SORT", async () => {
    for (const q of ["sort=foo", "sort=PRICE_ASC", "sort="]) expectError(await get(`/items?${q}`), 400, "MERCHANT_INVALID_SORT")
  })

  it("a garbage cursor, or another sort's cursor, gives 400 MERCHANT_INVALID_QUERY", async () => {
    for (const cursor of ["garbage!", "abc", Buffer.from("[\"a\",1]").toString("base64url"), Buffer.from("[\"a\",1.5,\"x\"]").toString("base64url"), "%00"]) {
      expectError(await get(`/items?cursor=${encodeURIComponent(cursor)}`), 400, "MERCHANT_INVALID_QUERY")
    }
    const asc = await listItems({ limit: 1 })
    expect(asc.next_cursor).not.toBeNull()
    expectError(await get(`/items?limit=1&sort=price_desc&cursor=${asc.next_cursor}`), 400, "MERCHANT_INVALID_QUERY")
  })

  it("search without market_hash_name (or an empty one), or with limit 0, 51 or a bad float, gives 400 MERCHANT_INVALID_QUERY", async () => {
    const name = encodeURIComponent(NAMES[0])
    for (
      const q of [
        "",
        "?limit=5",
        "?market_hash_name=",
        "?market_hash_name=&limit=5",
        `?market_hash_name=${name}&limit=51`,
        `?market_hash_name=${name}&limit=0`,
        `?market_hash_name=${name}&min_float=2`,
        `?market_hash_name=${name}&max_price=abc`,
        `?market_hash_name=${name}&max_price=-5`
      ]
    ) {
      expectError(await get(`/items/search${q}`), 400, "MERCHANT_INVALID_QUERY")
    }
    expect((await get(`/items/search?market_hash_name=${name}&limit=50`)).status).toBe(200)
    expect((await get(`/items/search?market_hash_name=${name}&limit=1`)).status).toBe(200)
  })

  it("delivery_type=unknown is ignored: the same answer as without it", async () => {
    const plain = await walk({ limit: 200 }, 200)
    expect(await walk({ limit: 200, delivery_type: "unknown" }, 200)).toEqual(plain)
    const name = NAMES[1]
    const search = await searchItems({ market_hash_name: name })
    expect(await searchItems({ market_hash_name: name, delivery_type: "unknown" })).toEqual(search)
  })

  it("list and search need an API key", async () => {
    expectError(await server.api("/items", { key: null }), 401, "MERCHANT_API_KEY_MISSING")
    expectError(await server.api("/items/search?market_hash_name=x", { key: "nope" }), 401, "MERCHANT_API_KEY_MISSING")
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
