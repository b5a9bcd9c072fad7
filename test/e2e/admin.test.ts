/**
 * The admin API of the ops listener (CONTRACT 2) over real sockets: authentication, merchants
 * created, read, changed and rotated, legacy addresses. Its OpenAPI document:
 * openapi-document.test.ts; an unknown route under /admin: errors.test.ts.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CreatedMerchant, MerchantView } from "../../src/Ops/AdminApi.js"
import {
  createdMerchant,
  expectAdminError,
  MERCHANT_VIEW_KEYS,
  merchantRoutes,
  merchantView,
  setLegacyAddresses,
  uniqueMerchantName,
  updatedMerchant
} from "../support/admin.js"
import { bodyOf, errorBody, expectError, ISO_UTC, isUuid, objectOf } from "../support/expectations.js"
import type { RunningServer } from "../support/server.js"
import { startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server?.stop()
})

/** GET /balance with a working key through the typed client (any answer but the 200 Balance rejects). */
const balance = (apiKey: string) => server.merchant(apiKey).call((client) => client.balance.getBalance())

describe("admin authentication", () => {
  it("refuses a missing, wrong or differently-schemed token with 401 in the Error shape, and does nothing", async () => {
    const m = await server.createMerchant()
    const name = uniqueMerchantName("unauthorised")
    const routes: Array<[string, string, unknown]> = [
      ["POST", "/admin/merchants", { name, webhook_url: null }],
      ...merchantRoutes(m.id),
      ["POST", "/admin/deposits", { merchant_id: m.id, network: "tron", amount: 100 }]
    ]
    const tokens: Array<string | null> = [null, "wrong", `${server.adminToken}x`, server.adminToken.slice(0, -1), ""]
    for (const [method, path, body] of routes) {
      for (const token of tokens) {
        const res = await server.admin(path, { method, body, token })
        expect({ method, path, token, status: res.status }).toEqual({ method, path, token, status: 401 })
        expectAdminError(res, 401)
      }
      // The token under another scheme is refused too.
      const basic = await fetch(`${server.opsUrl}${path}`, {
        method,
        headers: { authorization: `Basic ${server.adminToken}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      expect(basic.status).toBe(401)
    }
    // Nothing happened: same key, still active, no balance, no addresses.
    expect(await balance(m.apiKey)).toMatchObject({
      available: 0,
      deposit_addresses: { trc20: null, bep20: null }
    })
    const view = await merchantView(server, m.id)
    expect(view.status).toBe("active")
  })
})

describe("POST /admin/merchants", () => {
  it("creates an active merchant: 201 with its id, key, webhook secret and URL", async () => {
    const name = uniqueMerchantName()
    const created = await createdMerchant(server, name, "https://hooks.example.com/skins")
    expect(Object.keys(created).sort()).toEqual(["api_key", "merchant_id", "name", "status", "webhook_secret", "webhook_url"])
    expect(isUuid(created.merchant_id)).toBe(true)
    expect(created.name).toBe(name)
    expect(created.status).toBe("active")
    expect(created.api_key).toMatch(/^mer_live_[A-Za-z0-9_-]{32,}$/)
    expect(typeof created.webhook_secret).toBe("string")
    expect(created.webhook_secret.length).toBeGreaterThanOrEqual(32)
    expect(created.webhook_url).toBe("https://hooks.example.com/skins")
    // The key works at once and identifies this merchant.
    await balance(created.api_key)
  })

  it("webhook_url is optional and may be null", async () => {
    // raw: the typed client sends the field's default (null); leaving it out is what is tested
    const omitted = await server.admin("/admin/merchants", { method: "POST", body: { name: uniqueMerchantName() } })
    expect(omitted.status).toBe(201)
    expect(bodyOf(omitted, CreatedMerchant).webhook_url).toBeNull()
    expect((await createdMerchant(server, uniqueMerchantName(), null)).webhook_url).toBeNull()
  })

  it("issues different keys and secrets to every merchant", async () => {
    const created = await Promise.all(Array.from({ length: 4 }, () => createdMerchant(server, uniqueMerchantName())))
    expect(new Set(created.map((r) => r.api_key)).size).toBe(4)
    expect(new Set(created.map((r) => r.webhook_secret)).size).toBe(4)
    expect(new Set(created.map((r) => r.merchant_id)).size).toBe(4)
  })

  it("a taken name is 409", async () => {
    const name = uniqueMerchantName()
    await createdMerchant(server, name)
    const again = await server.admin("/admin/merchants", { method: "POST", body: { name, webhook_url: "https://other.example.com" } })
    expectAdminError(again, 409)
  })

  it("concurrent creations of one name: exactly one 201, every other 409, never a 5xx", async () => {
    const name = uniqueMerchantName("race")
    const results = await Promise.all(Array.from({ length: 8 }, () => server.admin("/admin/merchants", { method: "POST", body: { name } })))
    const statuses = results.map((r) => r.status).sort()
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409])
  })

  it("an invalid body is 400", async () => {
    const bodies: Array<unknown> = [
      {},
      { name: "" },
      { name: 5 },
      { name: null },
      { name: "x".repeat(101) },
      { name: uniqueMerchantName(), webhook_url: "ftp://hooks.example.com" },
      { name: uniqueMerchantName(), webhook_url: "not a url" },
      { name: uniqueMerchantName(), webhook_url: 42 },
      [],
      "null",
      "{not json"
    ]
    for (const body of bodies) {
      const res = await server.admin("/admin/merchants", { method: "POST", body })
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expectAdminError(res, 400)
    }
    // the message names the field at fault
    const res = await server.admin("/admin/merchants", { method: "POST", body: { name: uniqueMerchantName(), webhook_url: 42 } })
    expect(errorBody(res).message).toMatch(/^webhook_url: /)
  })
})

describe("GET and PATCH /admin/merchants/{id}", () => {
  it("GET shows the merchant without its key or webhook secret", async () => {
    const name = uniqueMerchantName()
    const created = await createdMerchant(server, name, "https://h.example.com/x")
    // raw: its text must not hold the key or the secret
    const res = await server.admin(`/admin/merchants/${created.merchant_id}`)
    expect(res.status).toBe(200)
    expect(Object.keys(objectOf(res)).sort()).toEqual(MERCHANT_VIEW_KEYS)
    expect(res.json).toMatchObject({
      merchant_id: created.merchant_id,
      name,
      status: "active",
      webhook_url: "https://h.example.com/x",
      deposit_addresses: { trc20: null, bep20: null }
    })
    const view = bodyOf(res, MerchantView)
    expect(view.created_at).toMatch(ISO_UTC)
    expect(view.updated_at).toMatch(ISO_UTC)
    expect(res.text).not.toContain(created.api_key)
    expect(res.text).not.toContain(created.api_key.slice("mer_live_".length))
    expect(res.text).not.toContain(created.webhook_secret)
    expect(res.text).not.toMatch(/api_key|webhook_secret|key_hash/)
  })

  it("PATCH changes status and webhook_url independently", async () => {
    const m = await server.createMerchant(uniqueMerchantName(), "https://a.example.com/hook")

    const blocked = await updatedMerchant(server, m.id, { status: "blocked" })
    expect(Object.keys(blocked).sort()).toEqual(MERCHANT_VIEW_KEYS)
    expect(blocked).toMatchObject({ merchant_id: m.id, status: "blocked", webhook_url: "https://a.example.com/hook" })
    expect((await merchantView(server, m.id)).status).toBe("blocked")

    const url = await updatedMerchant(server, m.id, { webhook_url: "http://b.example.com/hook?x=1" })
    expect(url).toMatchObject({ status: "blocked", webhook_url: "http://b.example.com/hook?x=1" })

    const both = await updatedMerchant(server, m.id, { status: "inactive", webhook_url: null })
    expect(both).toMatchObject({ status: "inactive", webhook_url: null })

    const nothing = await updatedMerchant(server, m.id, {})
    expect(nothing).toMatchObject({ status: "inactive", webhook_url: null })

    const active = await updatedMerchant(server, m.id, { status: "active" })
    expect(active.status).toBe("active")
    expect(await merchantView(server, m.id)).toMatchObject({ status: "active", webhook_url: null })
  })

  it("a JSON body is read as JSON whatever its Content-Type (curl's -d sends a form type); a body that is not JSON is 400 and changes nothing", async () => {
    const m = await server.createMerchant()
    const path = `/admin/merchants/${m.id}`
    const patch = (body: string, contentType?: string) =>
      fetch(`${server.opsUrl}${path}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${server.adminToken}`, ...(contentType ? { "content-type": contentType } : {}) },
        body
      })
    const asForm = await patch(JSON.stringify({ status: "blocked" }), "application/x-www-form-urlencoded")
    expect(asForm.status).toBe(200)
    expect((await merchantView(server, m.id)).status).toBe("blocked")
    const untyped = await patch(JSON.stringify({ status: "inactive" }))
    expect(untyped.status).toBe(200)
    expect((await merchantView(server, m.id)).status).toBe("inactive")
    const form = await patch("status=active", "application/x-www-form-urlencoded")
    expect(form.status).toBe(400)
    expect(((await form.json()) as { error: { code: string } }).error.code).toBe("ADMIN_INVALID_REQUEST")
    expect((await merchantView(server, m.id)).status).toBe("inactive")
  })

  it("PATCH with an invalid body is 400 and changes nothing", async () => {
    const m = await server.createMerchant()
    const path = `/admin/merchants/${m.id}`
    for (const body of [{ status: "deleted" }, { status: "BLOCKED" }, { status: null }, { webhook_url: "javascript:alert(1)" }, { webhook_url: 5 }, "{"]) {
      const res = await server.admin(path, { method: "PATCH", body })
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expectAdminError(res, 400)
    }
    expect(await merchantView(server, m.id)).toMatchObject({ status: "active", webhook_url: null })
  })
})

describe("unknown and malformed merchant ids", () => {
  it("an unknown uuid is 404 on every merchant route", async () => {
    for (const [method, path, body] of merchantRoutes(randomUUID())) {
      const res = await server.admin(path, { method, body })
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 })
      expectAdminError(res, 404)
    }
  })

  it("an id that is not a uuid is 404 on every merchant route (never a 5xx)", async () => {
    const outcomes: Array<{ method: string; path: string; status: number }> = []
    for (const id of ["not-a-uuid", "123", "00000000-0000-0000-0000-00000000000g"]) {
      for (const [method, path, body] of merchantRoutes(id)) {
        const res = await server.admin(path, { method, body })
        outcomes.push({ method, path, status: res.status })
        if (res.status === 404) expectAdminError(res, 404)
      }
    }
    expect(outcomes.filter((o) => o.status !== 404)).toEqual([])
  })
})

describe("credential rotation", () => {
  it("POST /api-key returns 201 with a new key only; the old key stops working", async () => {
    const m = await server.createMerchant()
    // the typed call resolves on the declared 201 only
    const res = await server.adminApi.call((client) => client.merchants.rotateApiKey({ path: { id: m.id } }))
    expect(Object.keys(res)).toEqual(["api_key"])
    expect(res.api_key).toMatch(/^mer_live_[A-Za-z0-9_-]{32,}$/)
    expect(res.api_key).not.toBe(m.apiKey)
    expectError(await server.api("/balance", { key: m.apiKey }), 401, "MERCHANT_API_KEY_MISSING")
    await balance(res.api_key)
  })

  it("POST /webhook-secret returns 201 with a new secret each time, never shown by GET", async () => {
    const m = await server.createMerchant()
    // the typed call resolves on the declared 201 only
    const rotate = () => server.adminApi.call((client) => client.merchants.rotateWebhookSecret({ path: { id: m.id } }))
    const first = await rotate()
    expect(Object.keys(first)).toEqual(["webhook_secret"])
    expect(typeof first.webhook_secret).toBe("string")
    expect(first.webhook_secret.length).toBeGreaterThanOrEqual(32)
    expect(first.webhook_secret).not.toBe(m.webhookSecret)
    const second = await rotate()
    expect(second.webhook_secret).not.toBe(first.webhook_secret)
    // raw: the check is on the answer's text
    const view = await server.admin(`/admin/merchants/${m.id}`)
    expect(view.text).not.toContain(second.webhook_secret)
    // The API key is unaffected.
    await balance(m.apiKey)
  })
})

describe("PUT /admin/merchants/{id}/legacy-addresses", () => {
  it("sets both addresses (each nullable), shown by GET and as Balance.deposit_addresses", async () => {
    const m = await server.createMerchant()
    const set = await setLegacyAddresses(server, m.id, { trc20: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE", bep20: "0xabc" })
    expect(set.deposit_addresses).toEqual({ trc20: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE", bep20: "0xabc" })
    expect((await merchantView(server, m.id)).deposit_addresses).toEqual(set.deposit_addresses)
    expect((await balance(m.apiKey)).deposit_addresses).toEqual(set.deposit_addresses)

    const cleared = await setLegacyAddresses(server, m.id, { trc20: null, bep20: null })
    expect(cleared.deposit_addresses).toEqual({ trc20: null, bep20: null })
    expect((await balance(m.apiKey)).deposit_addresses).toEqual({ trc20: null, bep20: null })
  })

  it("an invalid body is 400 and changes nothing", async () => {
    const m = await server.createMerchant()
    const path = `/admin/merchants/${m.id}/legacy-addresses`
    await setLegacyAddresses(server, m.id, { trc20: "T1", bep20: "0x1" })
    for (const body of [{ trc20: "T2" }, {}, { trc20: "", bep20: null }, { trc20: 5, bep20: null }, { trc20: "x".repeat(129), bep20: null }, "{"]) {
      const res = await server.admin(path, { method: "PUT", body })
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expectAdminError(res, 400)
    }
    expect((await balance(m.apiKey)).deposit_addresses).toEqual({ trc20: "T1", bep20: "0x1" })
  })
})
