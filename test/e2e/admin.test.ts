/** The admin API of the ops listener (CONTRACT 2) over real sockets. */
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CreatedMerchant, type LegacyAddresses, MerchantView, type PatchMerchant } from "../../src/Ops/AdminApi.js"
import { bodyOf, errorBody, expectError, ISO_UTC, isUuid, objectOf } from "../support/expectations.js"
import type { JsonResponse, RunningServer } from "../support/server.js"
import { startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server?.stop()
})

let counter = 0
const uniqueName = (prefix = "acme") => `${prefix}-${process.pid}-${counter++}-${randomUUID().slice(0, 8)}`

/** An admin error: the spec's Error body (2.1) with the given status. */
const expectAdminError = (res: JsonResponse, status: number) => {
  expect({ status: res.status, text: res.text }).toMatchObject({ status })
  const { code, message } = errorBody(res)
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
  // the admin API's own codes (README, "Admin API"), and a message a person can read in one line
  const codes: Record<number, string> = { 400: "ADMIN_INVALID_REQUEST", 401: "ADMIN_UNAUTHORIZED", 404: "ADMIN_NOT_FOUND", 409: "ADMIN_CONFLICT" }
  if (codes[status] !== undefined) expect(code).toBe(codes[status])
  expect(message.length).toBeLessThan(300)
}

/** POST /admin/merchants with a valid body through the typed client: the 201 CreatedMerchant. */
const create = (name: string, webhook_url: string | null = null) =>
  server.adminApi.call((client) => client.merchants.createMerchant({ payload: { name, webhook_url } }))

/** GET /admin/merchants/{id} through the typed client (valid id; a 404 or any other answer rejects). */
const viewOf = (id: string) => server.adminApi.call((client) => client.merchants.getMerchant({ path: { id } }))

/** PATCH /admin/merchants/{id} with a valid body through the typed client. */
const update = (id: string, payload: typeof PatchMerchant.Type) => server.adminApi.call((client) => client.merchants.updateMerchant({ path: { id }, payload }))

/** PUT /admin/merchants/{id}/legacy-addresses with a valid body through the typed client. */
const setLegacy = (id: string, payload: typeof LegacyAddresses.Type) =>
  server.adminApi.call((client) => client.merchants.setLegacyAddresses({ path: { id }, payload }))

/** GET /balance with a working key through the typed client (any answer but the 200 Balance rejects). */
const balance = (apiKey: string) => server.merchant(apiKey).call((client) => client.balance.getBalance())

const MERCHANT_VIEW_KEYS = ["created_at", "deposit_addresses", "merchant_id", "name", "status", "updated_at", "webhook_url"]

describe("admin authentication", () => {
  it("refuses a missing, wrong or differently-schemed token with 401 in the Error shape, and does nothing", async () => {
    const m = await server.createMerchant()
    const name = uniqueName("unauthorised")
    const routes: Array<[string, string, unknown]> = [
      ["POST", "/admin/merchants", { name, webhook_url: null }],
      ["GET", `/admin/merchants/${m.id}`, undefined],
      ["PATCH", `/admin/merchants/${m.id}`, { status: "blocked" }],
      ["POST", `/admin/merchants/${m.id}/api-key`, undefined],
      ["POST", `/admin/merchants/${m.id}/webhook-secret`, undefined],
      ["PUT", `/admin/merchants/${m.id}/legacy-addresses`, { trc20: "T1", bep20: null }],
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
    const view = await viewOf(m.id)
    expect(view.status).toBe("active")
  })
})

describe("POST /admin/merchants", () => {
  it("creates an active merchant: 201 with its id, key, webhook secret and URL", async () => {
    const name = uniqueName()
    const created = await create(name, "https://hooks.example.com/skins")
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
    const omitted = await server.admin("/admin/merchants", { method: "POST", body: { name: uniqueName() } })
    expect(omitted.status).toBe(201)
    expect(bodyOf(omitted, CreatedMerchant).webhook_url).toBeNull()
    expect((await create(uniqueName(), null)).webhook_url).toBeNull()
  })

  it("issues different keys and secrets to every merchant", async () => {
    const created = await Promise.all(Array.from({ length: 4 }, () => create(uniqueName())))
    expect(new Set(created.map((r) => r.api_key)).size).toBe(4)
    expect(new Set(created.map((r) => r.webhook_secret)).size).toBe(4)
    expect(new Set(created.map((r) => r.merchant_id)).size).toBe(4)
  })

  it("a taken name is 409", async () => {
    const name = uniqueName()
    await create(name)
    const again = await server.admin("/admin/merchants", { method: "POST", body: { name, webhook_url: "https://other.example.com" } })
    expectAdminError(again, 409)
  })

  it("concurrent creations of one name: exactly one 201, every other 409, never a 5xx", async () => {
    const name = uniqueName("race")
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
      { name: uniqueName(), webhook_url: "ftp://hooks.example.com" },
      { name: uniqueName(), webhook_url: "not a url" },
      { name: uniqueName(), webhook_url: 42 },
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
    const res = await server.admin("/admin/merchants", { method: "POST", body: { name: uniqueName(), webhook_url: 42 } })
    expect(errorBody(res).message).toMatch(/^webhook_url: /)
  })
})

describe("GET and PATCH /admin/merchants/{id}", () => {
  it("GET shows the merchant without its key or webhook secret", async () => {
    const name = uniqueName()
    const created = await create(name, "https://h.example.com/x")
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
    const m = await server.createMerchant(uniqueName(), "https://a.example.com/hook")

    const blocked = await update(m.id, { status: "blocked" })
    expect(Object.keys(blocked).sort()).toEqual(MERCHANT_VIEW_KEYS)
    expect(blocked).toMatchObject({ merchant_id: m.id, status: "blocked", webhook_url: "https://a.example.com/hook" })
    expect((await viewOf(m.id)).status).toBe("blocked")

    const url = await update(m.id, { webhook_url: "http://b.example.com/hook?x=1" })
    expect(url).toMatchObject({ status: "blocked", webhook_url: "http://b.example.com/hook?x=1" })

    const both = await update(m.id, { status: "inactive", webhook_url: null })
    expect(both).toMatchObject({ status: "inactive", webhook_url: null })

    const nothing = await update(m.id, {})
    expect(nothing).toMatchObject({ status: "inactive", webhook_url: null })

    const active = await update(m.id, { status: "active" })
    expect(active.status).toBe("active")
    expect(await viewOf(m.id)).toMatchObject({ status: "active", webhook_url: null })
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
    expect((await viewOf(m.id)).status).toBe("blocked")
    const untyped = await patch(JSON.stringify({ status: "inactive" }))
    expect(untyped.status).toBe(200)
    expect((await viewOf(m.id)).status).toBe("inactive")
    const form = await patch("status=active", "application/x-www-form-urlencoded")
    expect(form.status).toBe(400)
    expect(((await form.json()) as { error: { code: string } }).error.code).toBe("ADMIN_INVALID_REQUEST")
    expect((await viewOf(m.id)).status).toBe("inactive")
  })

  it("PATCH with an invalid body is 400 and changes nothing", async () => {
    const m = await server.createMerchant()
    const path = `/admin/merchants/${m.id}`
    for (const body of [{ status: "deleted" }, { status: "BLOCKED" }, { status: null }, { webhook_url: "javascript:alert(1)" }, { webhook_url: 5 }, "{"]) {
      const res = await server.admin(path, { method: "PATCH", body })
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expectAdminError(res, 400)
    }
    expect(await viewOf(m.id)).toMatchObject({ status: "active", webhook_url: null })
  })
})

describe("unknown and malformed merchant ids", () => {
  const routes = (id: string): Array<[string, string, unknown]> => [
    ["GET", `/admin/merchants/${id}`, undefined],
    ["PATCH", `/admin/merchants/${id}`, { status: "blocked" }],
    ["POST", `/admin/merchants/${id}/api-key`, undefined],
    ["POST", `/admin/merchants/${id}/webhook-secret`, undefined],
    ["PUT", `/admin/merchants/${id}/legacy-addresses`, { trc20: "T1", bep20: null }]
  ]

  it("an unknown uuid is 404 on every merchant route", async () => {
    for (const [method, path, body] of routes(randomUUID())) {
      const res = await server.admin(path, { method, body })
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 })
      expectAdminError(res, 404)
    }
  })

  it("an id that is not a uuid is 404 on every merchant route (never a 5xx)", async () => {
    const outcomes: Array<{ method: string; path: string; status: number }> = []
    for (const id of ["not-a-uuid", "123", "00000000-0000-0000-0000-00000000000g"]) {
      for (const [method, path, body] of routes(id)) {
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
    const set = await setLegacy(m.id, { trc20: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE", bep20: "0xabc" })
    expect(set.deposit_addresses).toEqual({ trc20: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE", bep20: "0xabc" })
    expect((await viewOf(m.id)).deposit_addresses).toEqual(set.deposit_addresses)
    expect((await balance(m.apiKey)).deposit_addresses).toEqual(set.deposit_addresses)

    const cleared = await setLegacy(m.id, { trc20: null, bep20: null })
    expect(cleared.deposit_addresses).toEqual({ trc20: null, bep20: null })
    expect((await balance(m.apiKey)).deposit_addresses).toEqual({ trc20: null, bep20: null })
  })

  it("an invalid body is 400 and changes nothing", async () => {
    const m = await server.createMerchant()
    const path = `/admin/merchants/${m.id}/legacy-addresses`
    await setLegacy(m.id, { trc20: "T1", bep20: "0x1" })
    for (const body of [{ trc20: "T2" }, {}, { trc20: "", bep20: null }, { trc20: 5, bep20: null }, { trc20: "x".repeat(129), bep20: null }, "{"]) {
      const res = await server.admin(path, { method: "PUT", body })
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expectAdminError(res, 400)
    }
    expect((await balance(m.apiKey)).deposit_addresses).toEqual({ trc20: "T1", bep20: "0x1" })
  })
})

describe("the ops listener outside /admin", () => {
  it("an unknown ops route is 404 in the Error shape", async () => {
    const res = await server.admin("/admin/no-such-route")
    expectAdminError(res, 404)
    expect(res.headers.get("x-request-id") ?? "").not.toBe("")
  })
})

/** What the test reads of an OpenAPI document (its other fields are left out of the decoding). */
const Operation = Schema.Struct({ security: Schema.optional(Schema.Unknown), responses: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
const PathsOnly = Schema.Struct({ paths: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
const AdminDocument = Schema.Struct({
  openapi: Schema.String,
  paths: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Operation }) }),
  components: Schema.Struct({ securitySchemes: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
})

describe("the admin API's OpenAPI document", () => {
  it("is served under the admin token and states every admin route with its bearer security and ADMIN_* errors", async () => {
    expectAdminError(await server.admin("/admin/openapi.json", { method: "GET", token: null }), 401)
    const res = await server.admin("/admin/openapi.json", { method: "GET" })
    expect(res.status).toBe(200)
    const doc = Schema.decodeUnknownSync(AdminDocument)(res.json)
    expect(doc.openapi).toMatch(/^3\./)
    const operations = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, operation })))
    expect(operations.map((o) => o.route).sort()).toEqual([
      "DELETE /admin/catalogue/items/{id}",
      "GET /admin/merchants",
      "GET /admin/merchants/{id}",
      "GET /admin/merchants/{id}/wallets",
      "PATCH /admin/merchants/{id}",
      "POST /admin/deposits",
      "POST /admin/merchants",
      "POST /admin/merchants/{id}/api-key",
      "POST /admin/merchants/{id}/invite",
      "POST /admin/merchants/{id}/webhook-events/recover",
      "POST /admin/merchants/{id}/webhook-secret",
      "POST /admin/simulator/wallets/{id}/payments",
      "POST /admin/simulator/wallets/{id}/status",
      "POST /admin/webhook-events/{id}/replay",
      "PUT /admin/catalogue/items",
      "PUT /admin/merchants/{id}/legacy-addresses",
      "PUT /admin/simulator/wallet-provider"
    ])
    for (const { operation } of operations) {
      expect(operation.security).toEqual([{ bearer: [] }])
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["401", "404"]))
    }
    expect(doc.components.securitySchemes["bearer"]).toMatchObject({ type: "http", scheme: "bearer" })
    // a body that does not decode is ADMIN_INVALID_REQUEST, as the document says (not HttpApi's own error)
    expect(res.text).not.toContain("HttpApiDecodeError")
    expect(JSON.stringify(doc.paths["/admin/merchants"]?.["post"]?.responses["400"])).toContain("ADMIN_INVALID_REQUEST")
    // the merchant API's document does not carry the admin routes
    const merchantDoc = Schema.decodeUnknownSync(PathsOnly)(await fetch(`${server.baseUrl}/api/v1/merchant/openapi.json`).then((r) => r.json()))
    expect(Object.keys(merchantDoc.paths).some((path) => path.startsWith("/admin"))).toBe(false)
  })
})
