/**
 * How GET /items and GET /items/search read their query (spec 4.2, 7; CONTRACT 6): numbers strictly
 * (no hex, signs, spaces or exponents in a limit), price bounds exactly as written, past what a double
 * holds, and every refusal: bad limits and filter values, non-finite bounds, an unknown sort, a
 * garbage or another sort's cursor, a search without a name, a missing API key. On a small
 * catalogue of generated items; the answers themselves are checked in catalogue-list.test.ts.
 */
import { Schema } from "effect"
import * as fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ItemPage, SearchResults } from "../../src/Catalogue/Api.js"
import { CatalogueItems } from "../../src/Ops/AdminApi.js"
import type { ListUrlParams } from "../support/catalogue-query-model.js"
import { deleteItem, eventually, itemInputArb, NAMES, putItems } from "../support/catalogue.js"
import { bodyOf, codeOf, expectError } from "../support/expectations.js"
import { type RunningServer, startServer } from "../support/server.js"

const SEED = Number(process.env["CATALOGUE_SEED"] ?? Date.now() % 1_000_000)

describe(`catalogue query parameters (seed ${SEED})`, () => {
  let server: RunningServer
  let key: string

  /** Raw GET: for query text the typed client cannot write (numbers as written, bad values) and for statuses. */
  const get = (path: string) => server.api(path, { key })

  /** The items of a raw GET /items whose answer must be an ItemPage (query text as written). */
  const itemsOf = async (path: string) => bodyOf(await get(path), ItemPage).items

  /** GET /items through the typed client (valid parameters): the decoded page, or a rejection. */
  const listItems = (urlParams: ListUrlParams) => server.merchant(key).call((client) => client.catalogue.listItems({ urlParams }))

  beforeAll(async () => {
    server = await startServer({
      env: { SIM_CATALOGUE_SIZE: "0", SIM_CHURN_PER_SECOND: "0", RATE_LIMIT_RPS: "100000", RATE_LIMIT_BURST: "100000" }
    })
    key = (await server.createMerchant()).apiKey
    // a few generated items: pages to hold a cursor, items to compare bounds on (ids unique, as one
    // load keeps an id's last write only)
    const inputs = fc.sample(fc.array(itemInputArb, { minLength: 30, maxLength: 30 }), { numRuns: 1, seed: SEED })[0]!
    const unique = inputs.filter((input, i) => input["id"] === undefined || inputs.findIndex((o) => o["id"] === input["id"]) === i)
    await putItems(server, unique)
    // the catalogue applies the change log asynchronously: wait until everything is listed
    await eventually(async () => expect((await listItems({ limit: 200 })).items.length).toBe(unique.length))
  })
  afterAll(async () => {
    await server?.stop()
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

  it("list and search need an API key", async () => {
    expectError(await server.api("/items", { key: null }), 401, "MERCHANT_API_KEY_MISSING")
    expectError(await server.api("/items/search?market_hash_name=x", { key: "nope" }), 401, "MERCHANT_API_KEY_MISSING")
  })
})
