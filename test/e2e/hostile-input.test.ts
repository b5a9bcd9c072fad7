/**
 * Input that PostgreSQL cannot hold never reaches it: a NUL character in a string, a date outside
 * the calendar (year 0, February 30, hour 24), in a body, a query or a cursor, on the merchant API
 * and the admin API. Each gets a 400 with its field's code and changes nothing; none is a 5xx.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { balanceOf, buyBody, byNameBody, fundedMerchant, listPurchases, loadItem, type Merchant, PURCHASE_ENV } from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
let m: Merchant
let itemId: string
beforeAll(async () => {
  server = await startServer({ env: PURCHASE_ENV })
  m = await fundedMerchant(server, 10_000)
  itemId = await loadItem(server, 100)
})
afterAll(async () => { await server?.stop() })

const NUL = "\u0000"
const cursorOf = (position: unknown) => Buffer.from(JSON.stringify(position)).toString("base64url")

const outcome = (what: string, res: { status: number; json: any }) => `${what}: ${res.status} ${res.json?.error?.code}`

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
      `/purchases?cursor=${cursorOf(["0000-01-01T00:00:00.000000Z", randomUUID()])}`,
      `/purchases?cursor=${cursorOf(["2026-13-45T00:00:00.000000Z", randomUUID()])}`,
      `/deposits?cursor=${cursorOf(["0000-01-01T00:00:00.000000Z", randomUUID()])}`,
      `/webhook-events?cursor=${cursorOf(["2026-02-30T00:00:00.000000Z", randomUUID()])}`
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

describe("admin API", () => {
  it("a NUL character anywhere in an admin body is 400 ADMIN_INVALID_REQUEST, and nothing changes", async () => {
    const created = await server.admin("/admin/merchants", { method: "POST", body: { name: `nul-${randomUUID()}` } })
    expect(created.status).toBe(201)
    const id = created.json.merchant_id as string
    const before = await balanceOf(server, m)
    const item = (await server.api(`/items?limit=1`, { key: m.apiKey })).json.items[0]
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
    const shown = await server.admin(`/admin/merchants/${id}`)
    expect([shown.json.webhook_url, shown.json.deposit_addresses ?? null]).toEqual([created.json.webhook_url, shown.json.deposit_addresses ?? null])
    const again = await server.api(`/items?limit=1`, { key: m.apiKey })
    expect(again.json.items[0]).toEqual(item)
  })

  it("the same tx_id on another network is 409 ADMIN_CONFLICT, not the first deposit", async () => {
    const txId = `tx-${randomUUID()}`
    const first = await server.admin("/admin/deposits", { method: "POST", body: { merchant_id: m.id, network: "tron", amount: 10, tx_id: txId } })
    expect(first.status).toBe(201)
    const before = await balanceOf(server, m)
    const repeat = await server.admin("/admin/deposits", { method: "POST", body: { merchant_id: m.id, network: "tron", amount: 10, tx_id: txId } })
    expect([repeat.status, repeat.json.id]).toEqual([201, first.json.id])
    const otherNetwork = await server.admin("/admin/deposits", { method: "POST", body: { merchant_id: m.id, network: "bsc", amount: 10, tx_id: txId } })
    expect(outcome("bsc", otherNetwork)).toBe("bsc: 409 ADMIN_CONFLICT")
    expect(await balanceOf(server, m)).toEqual(before)
  })

  it("an unknown admin route is 404 ADMIN_NOT_FOUND", async () => {
    const res = await server.admin("/admin/nothing-here")
    expect(outcome("unknown", res)).toBe("unknown: 404 ADMIN_NOT_FOUND")
  })
})
