/**
 * Input that PostgreSQL cannot hold never reaches it: a NUL character or a lone surrogate in a
 * string, a date outside the calendar (year 0, February 30, hour 24), in a body, a query or a
 * cursor, on the merchant API and the admin API. Bodies that are too large, not UTF-8 or nested
 * absurdly deep are refused as they are read. Each gets a 4xx with its field's code (or problem
 * details) and changes nothing; none is a 5xx, and the process lives on.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PurchaseCreated } from "../../src/Purchases/Api.js"
import { bodyOf, codeOf, errorBody, field } from "../support/expectations.js"
import { buyTextWith, forgedCursor, nested, NUL } from "../support/hostile-input.js"
import {
  balanceOf,
  buyBody,
  byNameBody,
  fundedMerchant,
  listPurchases,
  loadItem,
  type Merchant,
  pollUntil,
  PURCHASE_ENV,
  purchaseIds,
  settledBalanceOf,
  uniqueName
} from "../support/purchases.js"
import { rawPost, streamedPost } from "../support/raw-http.js"
import { type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
let m: Merchant
let itemId: string
beforeAll(async () => {
  server = await startServer({ env: PURCHASE_ENV })
  m = await fundedMerchant(server, 10_000)
  itemId = await loadItem(server, 100)
})
afterAll(async () => {
  await server?.stop()
})

const outcome = (what: string, res: { status: number; json: unknown }) => `${what}: ${res.status} ${codeOf(res)}`

describe("merchant API", () => {
  it("a NUL character in a purchase body field is that field's 400, and nothing is bought", async () => {
    const before = await balanceOf(server, m)
    const cases: ReadonlyArray<[string, string, unknown, string]> = [
      ["custom_id on /buy", "/buy", { ...buyBody({ itemId, maxPrice: 5 }), custom_id: `x${NUL}y` }, "MERCHANT_INVALID_CUSTOM_ID"],
      ["custom_id on /buy-sync", "/buy-sync", { ...buyBody({ itemId, maxPrice: 5 }), custom_id: `x${NUL}y` }, "MERCHANT_INVALID_CUSTOM_ID"],
      ["target_steam_id on /buy", "/buy", { ...buyBody({ itemId, maxPrice: 5 }), target_steam_id: `7656${NUL}` }, "MERCHANT_INVALID_STEAM_ID"],
      ["market_hash_name on /buy-by-name", "/buy-by-name", byNameBody({ name: `A${NUL}B`, maxPrice: 5 }), "MERCHANT_INVALID_MARKET_HASH_NAME"],
      ["custom_id on /buy-by-name", "/buy-by-name", { ...byNameBody({ name: "A", maxPrice: 5 }), custom_id: `${NUL}` }, "MERCHANT_INVALID_CUSTOM_ID"]
    ]
    for (const [what, path, body, code] of cases) {
      expect(outcome(what, await server.api(path, { method: "POST", key: m.apiKey, body }))).toBe(`${what}: 400 ${code}`)
    }
    expect(await balanceOf(server, m)).toEqual(before)
    expect(await listPurchases(server, m)).toEqual([])
  })

  it("a NUL character or a date outside the calendar in a list query is 400 MERCHANT_INVALID_QUERY", async () => {
    const nul = encodeURIComponent(NUL)
    const cases = [
      `/purchases?custom_id=a${nul}b`,
      `/purchases?target_steam_id=${nul}`,
      "/purchases?from=0000-01-01T00:00:00Z",
      "/purchases?to=0000-12-31T23:59:59Z",
      "/purchases?from=0001-01-01T00:00:00%2B01:00",
      "/purchases?from=2026-02-30T00:00:00Z",
      "/purchases?to=2026-01-01T24:00:00Z",
      "/purchases?from=2026-01-01T12:60:00Z",
      `/purchases?cursor=${forgedCursor(["0000-01-01T00:00:00.000000Z", randomUUID()])}`,
      `/purchases?cursor=${forgedCursor(["2026-13-45T00:00:00.000000Z", randomUUID()])}`,
      `/deposits?cursor=${forgedCursor(["0000-01-01T00:00:00.000000Z", randomUUID()])}`,
      `/webhook-events?cursor=${forgedCursor(["2026-02-30T00:00:00.000000Z", randomUUID()])}`
    ]
    for (const path of cases) {
      expect(outcome(path, await server.api(path, { key: m.apiKey }))).toBe(`${path}: 400 MERCHANT_INVALID_QUERY`)
    }
    // the calendar's real edges are fine
    for (const path of ["/purchases?from=0001-01-01T00:00:00Z", "/purchases?to=9999-12-31T23:59:59Z", "/purchases?from=2028-02-29T00:00:00Z"]) {
      expect(outcome(path, await server.api(path, { key: m.apiKey }))).toBe(`${path}: 200 undefined`)
    }
  })
})

describe("request bodies refused as they are read", () => {
  const api = (path: string) => `${server.baseUrl}/api/v1/merchant${path}`
  const auth = () => ({ authorization: `Bearer ${m.apiKey}` })
  const buyText = (fields: Record<string, string>) => buyTextWith(itemId, fields)

  it("a value nested thousands deep is its field's 400 (it was a 500), an unknown field's is problem details; nothing is bought", async () => {
    const before = await balanceOf(server, m)
    const deep = nested(5_000)
    const cases: ReadonlyArray<[string, string, string, string]> = [
      ["item_id on /buy", "/buy", buyText({ item_id: deep }), "400 MERCHANT_INVALID_ITEM_ID"],
      ["max_price on /buy", "/buy", buyText({ max_price: `{"a":${deep}}` }), "400 MERCHANT_INVALID_MAX_PRICE"],
      ["custom_id on /buy-sync", "/buy-sync", buyText({ custom_id: deep }), "400 MERCHANT_INVALID_CUSTOM_ID"],
      [
        "market_hash_name on /buy-by-name",
        "/buy-by-name",
        JSON.stringify(byNameBody({ name: "A", maxPrice: 5 })).replace(/"market_hash_name":"A"/, `"market_hash_name":${deep}`),
        "400 MERCHANT_INVALID_MARKET_HASH_NAME"
      ],
      ["the whole body", "/buy", nested(20_000), "400 MERCHANT_INVALID_ITEM_ID"],
      ["an unknown field", "/buy", buyText({ extra: deep }), "400 MERCHANT_MALFORMED_JSON"]
    ]
    for (const [what, path, text, expected] of cases) {
      const res = await rawPost(api(path), Buffer.from(text), auth())
      expect(`${what}: ${res.status} ${codeOf(res)}`).toBe(`${what}: ${expected}`)
      expect(field(res.json, "error", "message")).toMatch(/nested more than 32 levels deep/)
    }
    expect(await balanceOf(server, m)).toEqual(before)
    expect(await listPurchases(server, m)).toEqual([])
    // an unknown field nested a little is still ignored (CONTRACT 6)
    const fine = await rawPost(api("/buy"), Buffer.from(buyText({ extra: `{"a":${nested(20)}}` })), auth())
    expect(fine.status).toBe(201)
  })

  it("a body that is not UTF-8 is problem details, not a custom_id silently changed; a lone surrogate is the field's 400", async () => {
    // the previous test's purchase may still be moving on (status, on_hold): wait until nothing of m
    // is on hold, and compare the purchases by id, which only a new purchase changes
    const before = await settledBalanceOf(server, m)
    const purchasesBefore = await purchaseIds(server, m)
    const text = JSON.stringify(buyBody({ itemId, maxPrice: 5, customId: "XX" }))
    const at = text.indexOf("\"XX\"") + 1
    const bytes = Buffer.from(text)
    bytes[at] = 0xff
    bytes[at + 1] = 0xfe
    for (const [what, chunked] of [["with Content-Length", false], ["chunked", true]] as const) {
      const res = await rawPost(api("/buy"), bytes, auth(), chunked)
      expect([what, res.status, res.contentType, codeOf(res), field(res.json, "detail")]).toEqual(
        [what, 400, "application/problem+json", "MERCHANT_MALFORMED_JSON", "request body is not valid UTF-8 (JSON must be UTF-8)"]
      )
    }
    const surrogate = await rawPost(api("/buy"), Buffer.from(text.replace("\"XX\"", "\"\\ud800\"")), auth())
    expect([surrogate.status, codeOf(surrogate)]).toEqual([400, "MERCHANT_INVALID_CUSTOM_ID"])
    expect(errorBody(surrogate).message).toMatch(/lone surrogate/)
    expect(await balanceOf(server, m)).toEqual(before)
    expect(await purchaseIds(server, m)).toEqual(purchasesBefore)
    // UTF-8 beyond ASCII is of course fine, and kept as sent
    const customId = "café-★-😀"
    const another = await loadItem(server, 100)
    const ok = await rawPost(api("/buy"), Buffer.from(JSON.stringify(buyBody({ itemId: another, maxPrice: 5, customId }))), auth())
    expect([ok.status, bodyOf(ok, PurchaseCreated).custom_id]).toEqual([201, customId])
  })

  it("a body over 1 MiB (256 MiB on the admin API) is 413, with or without Content-Length, and the service lives on", async () => {
    const huge = Buffer.from(JSON.stringify({ ...byNameBody({ name: "A", maxPrice: 5 }), market_hash_name: "x".repeat(2 * 1024 * 1024) }))
    for (const chunked of [false, true]) {
      const res = await rawPost(api("/buy-by-name"), huge, auth(), chunked).catch((error: Error) => ({ status: 0, contentType: undefined, json: { error } }))
      expect([chunked, res.status, res.contentType, codeOf(res)]).toEqual([chunked, 413, "application/problem+json", "MERCHANT_BODY_TOO_LARGE"])
    }
    // 700 MiB, past V8's longest string: reading it whole ended the process
    expect(await streamedPost(api("/buy-by-name"), auth(), 700)).toBe(413)
    const admin = { authorization: `Bearer ${server.adminToken}` }
    // an admin body may be large (a catalogue file), up to 256 MiB
    const taken = await rawPost(`${server.opsUrl}/admin/merchants`, huge, admin)
    expect([taken.status, codeOf(taken)]).toEqual([400, "ADMIN_INVALID_REQUEST"])
    expect(await streamedPost(`${server.opsUrl}/admin/merchants`, admin, 300)).toBe(413)
    await balanceOf(server, m)
    await server.adminApi.call((client) => client.merchants.getMerchant({ path: { id: m.id } }))
    // a long value under the limit is its field's 400, and the answer does not echo it whole
    const long = await rawPost(api("/buy"), Buffer.from(buyText({ item_id: JSON.stringify("y".repeat(500_000)) })), auth())
    expect([long.status, codeOf(long)]).toEqual([400, "MERCHANT_INVALID_ITEM_ID"])
    expect(errorBody(long).message.length).toBeLessThan(400)
  })

  it("max_price is compared exactly as written, whatever its length or exponent (CONTRACT 6); only <= 0 is invalid", async () => {
    // its own merchant: these purchases go on moving its balance while later tests run
    const buyer = await fundedMerchant(server, 10_000)
    /** /buy of a fresh 1.00 item with max_price written as `literal`: status and code. */
    const buyWith = async (literal: string) => {
      const text = JSON.stringify(buyBody({ itemId: await loadItem(server, 100), maxPrice: 7 })).replace(`"max_price":7`, `"max_price":${literal}`)
      const res = await rawPost(api("/buy"), Buffer.from(text), { authorization: `Bearer ${buyer.apiKey}` })
      return `${literal.slice(0, 12)}: ${res.status} ${codeOf(res) ?? field(res.json, "item", "price")}`
    }
    const before = await balanceOf(server, buyer)
    // JSON.parse reads these as 1 (450 nines), 0 and -0: each was bought, refused as 0, or refused as 0
    expect(await buyWith(`0.${"9".repeat(450)}`)).toBe(`0.9999999999: 409 MERCHANT_PRICE_CHANGED`)
    expect(await buyWith("1e-400")).toBe("1e-400: 409 MERCHANT_PRICE_CHANGED")
    expect(await buyWith("-1e-400")).toBe("-1e-400: 400 MERCHANT_INVALID_MAX_PRICE")
    expect(await buyWith("-0")).toBe("-0: 400 MERCHANT_INVALID_MAX_PRICE")
    expect((await balanceOf(server, buyer)).available).toBe(before.available)
    // above every price, though JSON.parse reads Infinity: bought at the item's price
    expect(await buyWith("1e400")).toBe("1e400: 201 1")
    expect(await buyWith(`1${"0".repeat(400)}`)).toBe("100000000000: 201 1")
    expect(await buyWith(`1.${"0".repeat(450)}`)).toBe("1.0000000000: 201 1")
    expect((await balanceOf(server, buyer)).available).toBe(before.available - 300)
  })

  it("estimated_time has no upper bound: 2^31 minutes and more exclude nothing more (it was a 500)", async () => {
    const buyer = await fundedMerchant(server, 10_000)
    const name = `Eta ${randomUUID()}`
    await loadItem(server, 100, { market_hash_name: name, estimated_delivery_minutes: 2_147_483_647 })
    const before = await balanceOf(server, buyer)
    for (
      const [estimatedTime, expected] of [[2 ** 31, "400 MERCHANT_NO_ITEMS_FOUND"], [2 ** 53, "400 MERCHANT_NO_ITEMS_FOUND"], [
        1e300,
        "400 MERCHANT_NO_ITEMS_FOUND"
      ]] as const
    ) {
      const res = await rawPost(
        api("/buy-by-name"),
        Buffer.from(JSON.stringify({ ...byNameBody({ name: `${name} (none)`, maxPrice: 5 }), estimated_time: estimatedTime })),
        { authorization: `Bearer ${buyer.apiKey}` }
      )
      expect(`${estimatedTime}: ${res.status} ${codeOf(res)}`).toBe(`${estimatedTime}: ${expected}`)
    }
    const bought = await rawPost(api("/buy-by-name"), Buffer.from(JSON.stringify({ ...byNameBody({ name, maxPrice: 5 }), estimated_time: 2 ** 53 })), {
      authorization: `Bearer ${buyer.apiKey}`
    })
    expect([200, 202]).toContain(bought.status)
    expect(bodyOf(bought, PurchaseCreated).item.estimated_delivery_minutes).toBe(2_147_483_647)
    expect((await balanceOf(server, buyer)).available).toBe(before.available - 100)
  })
})

describe("admin API", () => {
  it("a NUL character anywhere in an admin body is 400 ADMIN_INVALID_REQUEST, and nothing changes", async () => {
    const created = await server.adminApi.call((client) => client.merchants.createMerchant({ payload: { name: `nul-${randomUUID()}`, webhook_url: null } }))
    const id = created.merchant_id
    // m's earlier purchases may still be in flight: compare its balance once they are all done
    const before = await settledBalanceOf(server, m)
    // an item of its own (the first listed one may be an earlier purchase's, delisted meanwhile)
    const name = uniqueName("Nul Guard")
    await loadItem(server, 100, { market_hash_name: name })
    const listed = async () => (await server.merchant(m.apiKey).call((client) => client.catalogue.listItems({ urlParams: { market_hash_name: name } }))).items
    const item = await pollUntil("the item listed", async () => (await listed())[0])
    const cases: ReadonlyArray<[string, string, string, unknown]> = [
      ["merchant name", "POST", "/admin/merchants", { name: `nul${NUL}byte` }],
      ["webhook_url", "PATCH", `/admin/merchants/${id}`, { webhook_url: `https://a.example/${NUL}` }],
      ["legacy address", "PUT", `/admin/merchants/${id}/legacy-addresses`, { trc20: `T${NUL}x`, bep20: null }],
      ["deposit tx_id", "POST", "/admin/deposits", { merchant_id: m.id, network: "tron", amount: 10, tx_id: `n${NUL}ul` }],
      ["catalogue item name", "PUT", "/admin/catalogue/items", { items: [{ ...item, market_hash_name: `A${NUL}B` }] }],
      ["a sticker's name", "PUT", "/admin/catalogue/items", {
        items: [{ ...item, has_stickers: true, stickers_count: 1, stickers: [{ slot: 0, name: `S${NUL}`, sticker_id: null, image_url: null, wear: null }] }]
      }]
    ]
    for (const [what, method, path, body] of cases) {
      expect(outcome(what, await server.admin(path, { method, body }))).toBe(`${what}: 400 ADMIN_INVALID_REQUEST`)
    }
    expect(await balanceOf(server, m)).toEqual(before)
    const shown = await server.adminApi.call((client) => client.merchants.getMerchant({ path: { id } }))
    expect([shown.webhook_url, shown.deposit_addresses ?? null]).toEqual([created.webhook_url, shown.deposit_addresses ?? null])
    expect(await listed()).toEqual([item])
  })

  it("the same tx_id on another network is 409 ADMIN_CONFLICT, not the first deposit", async () => {
    const txId = `tx-${randomUUID()}`
    const first = await server.deposit(m.id, 10, txId)
    const before = await settledBalanceOf(server, m)
    // the repeat is a 201 too (the typed call takes no other status), with the first deposit
    expect((await server.deposit(m.id, 10, txId)).id).toBe(first.id)
    const otherNetwork = await server.admin("/admin/deposits", { method: "POST", body: { merchant_id: m.id, network: "bsc", amount: 10, tx_id: txId } })
    expect(outcome("bsc", otherNetwork)).toBe("bsc: 409 ADMIN_CONFLICT")
    expect(await balanceOf(server, m)).toEqual(before)
  })

  it("a lone surrogate or a control character in a name, a body nested thousands deep or not UTF-8 is 400 ADMIN_INVALID_REQUEST; nothing is created", async () => {
    const name = `sur-${randomUUID()}`
    const auth = { authorization: `Bearer ${server.adminToken}` }
    const url = `${server.opsUrl}/admin/merchants`
    const cases: ReadonlyArray<[string, Buffer, RegExp]> = [
      ["lone surrogate", Buffer.from(JSON.stringify({ name: "x" }).replace("\"x\"", `"${name}\\ud800"`)), /^name: must not contain a lone surrogate/],
      ["deep", Buffer.from(`{"name":"${name}","webhook_url":${nested(5_000)}}`), /^webhook_url: nested more than 32 levels deep/],
      ["not UTF-8", Buffer.concat([Buffer.from(`{"name":"${name}`), Buffer.from([0xc3, 0x28]), Buffer.from("\"}")]), /not valid UTF-8/],
      ["a line break", Buffer.from(JSON.stringify({ name: `${name}\nsecond line` })), /^name: name must not contain control characters/]
    ]
    for (const [what, body, message] of cases) {
      const res = await rawPost(url, body, auth)
      expect([what, res.status, codeOf(res)]).toEqual([what, 400, "ADMIN_INVALID_REQUEST"])
      expect(errorBody(res).message).toMatch(message)
    }
    // the lone surrogate was stored as U+FFFD before: that name is not taken now
    await server.createMerchant(`${name}\ufffd`)
  })

  it("an unknown admin route is 404 ADMIN_NOT_FOUND, and 401 ADMIN_UNAUTHORIZED without the token (all of /admin is under it)", async () => {
    const res = await server.admin("/admin/nothing-here")
    expect(outcome("unknown", res)).toBe("unknown: 404 ADMIN_NOT_FOUND")
    for (const path of ["/admin/nothing-here", "/admin", "/admin/merchants/x/y/z"]) {
      expect(outcome(path, await server.admin(path, { token: null }))).toBe(`${path}: 401 ADMIN_UNAUTHORIZED`)
      expect(outcome(path, await server.admin(path, { token: "wrong" }))).toBe(`${path}: 401 ADMIN_UNAUTHORIZED`)
    }
  })
})
