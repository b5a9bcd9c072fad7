/**
 * Error shapes of the public listener, the ops endpoints (CONTRACT 2) and the OpenAPI document
 * and docs page, over real sockets.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import formats from "ajv-formats"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Predicate, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Answer, arrayField, codeOf, errorBody, expectError, field, ISO_UTC } from "../support/expectations.js"
import type { RunningServer } from "../support/server.js"
import { request, setMerchantStatus, startServer } from "../support/server.js"

let server: RunningServer
let merchant: { id: string; apiKey: string }
beforeAll(async () => {
  server = await startServer()
  merchant = await server.createMerchant()
})
afterAll(async () => {
  await server?.stop()
})

/** A GET of any URL as sent. */
const raw = (url: string, init: { headers?: Record<string, string> } = {}) => request(url, init)

/** An error body in the spec's shape, whatever its code: the code. */
const expectErrorShape = (res: Answer & { readonly headers: Headers }, status: number) => {
  expect({ status: res.status, text: res.text }).toMatchObject({ status })
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
  const { code } = errorBody(res)
  expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/)
  expect(res.headers.get("x-request-id") ?? "").not.toBe("")
  return code
}

describe("errors of the public listener", () => {
  it("an unknown route is 404 with the Error body, with or without a key", async () => {
    for (const key of [merchant.apiKey, null]) {
      for (const path of ["/no-such-route", "/balance/extra", `/purchases/${randomUUID()}/extra`]) {
        expectErrorShape(await server.api(path, { key }), 404)
      }
    }
    for (const path of ["/", "/api", "/api/v1/merchant", "/api/v2/merchant/balance"]) {
      expectErrorShape(await raw(`${server.baseUrl}${path}`), 404)
    }
  })

  it("a POST with a malformed JSON body to an unknown route is still a JSON error", async () => {
    const res = await server.api("/buy", { method: "POST", key: merchant.apiKey, body: "{\"item_id\": ", headers: { "content-type": "application/json" } })
    expect(res.status).toBeGreaterThanOrEqual(400)
    expect(res.status).toBeLessThan(500)
    expect(res.json).toBeDefined()
    expect(typeof codeOf(res)).toBe("string")
    expect(res.headers.get("content-type") ?? "").toMatch(/json/)
  })

  it("a known path with another method is 405 MERCHANT_METHOD_NOT_ALLOWED with Allow (it was 404 MERCHANT_NOT_FOUND)", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const res = await server.api("/balance", { method, key: merchant.apiKey, body: {} })
      expectError(res, 405, "MERCHANT_METHOD_NOT_ALLOWED")
      expect(res.headers.get("allow")).toBe("GET, HEAD")
    }
    const purchase = await server.api(`/purchases/${randomUUID()}`, { method: "DELETE", key: merchant.apiKey })
    expectError(purchase, 405, "MERCHANT_METHOD_NOT_ALLOWED")
    expect(purchase.headers.get("allow")).toBe("GET, HEAD")
    const buy = await server.api("/buy", { method: "GET", key: merchant.apiKey })
    expectError(buy, 405, "MERCHANT_METHOD_NOT_ALLOWED")
    expect(buy.headers.get("allow")).toBe("POST")
    // an unknown path stays 404
    expectError(await server.api("/balances", { method: "POST", key: merchant.apiKey, body: {} }), 404, "MERCHANT_NOT_FOUND")
  })

  it("API errors carry exactly the spec code", async () => {
    expectError(await server.api("/balance"), 401, "MERCHANT_API_KEY_MISSING")
    expectError(await server.api("/deposits?limit=0", { key: merchant.apiKey }), 400, "MERCHANT_INVALID_QUERY")
    expectError(await server.api("/deposits?cursor=nope", { key: merchant.apiKey }), 400, "MERCHANT_INVALID_QUERY")
  })
})

describe("ops endpoints", () => {
  it("/health is 200 while the process runs", async () => {
    const res = await raw(`${server.opsUrl}/health`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ status: "ok" })
  })

  it("/ready is 200 with its passing checks", async () => {
    const res = await raw(`${server.opsUrl}/ready`)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ ready: true, checks: { database: { ok: true }, migrations: { ok: true } } })
    const checks = field(res.json, "checks")
    for (const check of Predicate.isRecord(checks) ? Object.values(checks) : []) expect(field(check, "ok")).toBe(true)
  })

  it("an unknown ops route is 404 in the Error shape, with the admin API's code; GET / lists the routes", async () => {
    const unknown = await raw(`${server.opsUrl}/no-such-route`)
    expect(expectErrorShape(unknown, 404)).toBe("ADMIN_NOT_FOUND")
    const index = await raw(`${server.opsUrl}/`)
    expect(index.status).toBe(200)
    const listed = arrayField(index.json, "endpoints").map((e) => field(e, "path"))
    expect(listed).toEqual(expect.arrayContaining(["/health", "/ready", "/metrics", "/ops/fibers", "/admin/*"]))
    // every listed GET route answers
    for (const path of ["/health", "/metrics", "/ops/fibers"]) expect((await raw(`${server.opsUrl}${path}`)).status, path).toBe(200)
  })

  describe("/metrics", () => {
    interface Sample {
      readonly name: string
      readonly labels: Record<string, string>
      readonly value: number
    }
    const scrape = async (): Promise<{ text: string; samples: Array<Sample> }> => {
      const res = await raw(`${server.opsUrl}/metrics`)
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type") ?? "").toMatch(/^text\/plain/)
      const samples: Array<Sample> = []
      for (const line of res.text.split("\n")) {
        const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/)
        if (m === null) continue
        const labels: Record<string, string> = {}
        for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!
        samples.push({ name: m[1]!, labels, value: Number(m[3]) })
      }
      return { text: res.text, samples }
    }
    const find = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string>) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))

    it("counts HTTP requests by server, method, route and status", async () => {
      const balance = () => server.merchant(merchant.apiKey).call((client) => client.balance.getBalance())
      await balance()
      const before = await scrape()
      const labels = { server: "api", method: "GET", route: "/api/v1/merchant/balance", status: "200" }
      const was = find(before.samples, "http_requests_total", labels)?.value ?? 0
      expect(was).toBeGreaterThanOrEqual(1)

      await balance()
      await server.api("/balance")
      await server.api("/deposits?limit=0&cursor=zzz", { key: merchant.apiKey })
      const after = await scrape()
      expect(find(after.samples, "http_requests_total", labels)?.value).toBe(was + 1)
      expect(find(after.samples, "http_requests_total", { ...labels, status: "401" })?.value).toBeGreaterThanOrEqual(1)
      // The query string is not part of the route label.
      expect(find(after.samples, "http_requests_total", { server: "api", route: "/api/v1/merchant/deposits", status: "400" })?.value)
        .toBeGreaterThanOrEqual(1)
      expect(after.text).not.toMatch(/route="[^"]*\?/)
      // Latency too, with the same labels.
      expect(find(after.samples, "http_request_duration_seconds_count", labels)?.value).toBeGreaterThanOrEqual(2)
      // The ops listener is counted as its own server.
      expect(find(after.samples, "http_requests_total", { server: "ops", method: "GET", route: "/metrics", status: "200" })?.value)
        .toBeGreaterThanOrEqual(1)
    })

    it("folds ids in paths so labels stay bounded", async () => {
      const id = randomUUID()
      await server.api(`/purchases/${id}`, { key: merchant.apiKey })
      await server.adminApi.call((client) => client.merchants.getMerchant({ path: { id: merchant.id } }))
      const { text, samples } = await scrape()
      expect(text).not.toContain(id)
      expect(text).not.toContain(merchant.id)
      expect(find(samples, "http_requests_total", { server: "api", route: "/api/v1/merchant/purchases/:id" })).toBeDefined()
      expect(find(samples, "http_requests_total", { server: "ops", route: "/admin/merchants/:id", status: "200" })).toBeDefined()
    })

    it("labels a path no route matches `unmatched`, so made-up paths add no series; a route's other spellings count as the route", async () => {
      const marker = `made-up-${randomUUID().slice(0, 8)}`
      for (let i = 0; i < 5; i++) {
        await raw(`${server.baseUrl}/${marker}-${i}`)
        await raw(`${server.opsUrl}/${marker}-${i}`)
        await server.api(`/${marker}/${i}`, { key: merchant.apiKey })
      }
      const before = (await scrape()).samples
      const upper = find(before, "http_requests_total", { server: "api", method: "GET", route: "/api/v1/merchant/balance", status: "200" })?.value ?? 0
      expect((await raw(`${server.baseUrl}/api/v1/merchant/BALANCE`, { headers: { authorization: `Bearer ${merchant.apiKey}` } })).status).toBe(200)
      const { text, samples } = await scrape()
      expect(text).not.toContain(marker)
      expect(find(samples, "http_requests_total", { server: "api", route: "unmatched", status: "404" })?.value).toBeGreaterThanOrEqual(10)
      expect(find(samples, "http_requests_total", { server: "ops", route: "unmatched", status: "404" })?.value).toBeGreaterThanOrEqual(5)
      expect(find(samples, "http_requests_total", { server: "api", method: "GET", route: "/api/v1/merchant/balance", status: "200" })?.value).toBe(upper + 1)
    })

    it("reports Effect fiber counters and every supervised fiber's restarts", async () => {
      const { samples } = await scrape()
      expect(find(samples, "effect_fibers", { kind: "started" })?.value).toBeGreaterThan(0)
      expect(find(samples, "effect_fibers", { kind: "active" })?.value).toBeGreaterThan(0)
      const restarts = samples.filter((s) => s.name === "supervised_fiber_restarts_total")
      expect(restarts.map((s) => s.labels["fiber"])).toContain("merchant-auth-invalidation")
      expect(find(samples, "supervised_fiber_restarts_total", { fiber: "merchant-auth-invalidation" })?.value).toBe(0)
    })
  })

  describe("/ops/fibers", () => {
    const fibers = async () => {
      const res = await raw(`${server.opsUrl}/ops/fibers`)
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
      return Schema.decodeUnknownSync(Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })))(field(res.json, "fibers"))
    }

    it("lists each supervised fiber with name, state, restarts, last error and last heartbeat", async () => {
      const list = await fibers()
      expect(list.length).toBeGreaterThan(0)
      for (const fiber of list) {
        expect(Object.keys(fiber)).toEqual(expect.arrayContaining(["name", "state", "restarts", "last_error", "last_heartbeat"]))
        expect(typeof fiber["name"]).toBe("string")
        expect(["starting", "running", "restarting", "stopped"]).toContain(fiber["state"])
        expect(Number.isInteger(fiber["restarts"])).toBe(true)
        expect(fiber["last_error"] === null || typeof fiber["last_error"] === "string").toBe(true)
        expect(fiber["last_heartbeat"] === null || ISO_UTC.test(String(fiber["last_heartbeat"]))).toBe(true)
      }
      expect(new Set(list.map((f) => f["name"])).size).toBe(list.length)
      expect(list.find((f) => f["name"] === "merchant-auth-invalidation")).toMatchObject({
        state: "running",
        restarts: 0,
        last_error: null
      })
    })

    it("the auth-invalidation listener beats when a merchant changes", async () => {
      const heartbeat = async () => (await fibers()).find((f) => f["name"] === "merchant-auth-invalidation")?.["last_heartbeat"] ?? null
      const before = await heartbeat()
      const m = await server.createMerchant()
      await setMerchantStatus(server, m.id, "inactive")
      // The notification arrives asynchronously: poll (up to about 10 s) for the new beat.
      let beat = await heartbeat()
      for (let i = 0; i < 100 && beat === before; i++) {
        await new Promise((r) => setTimeout(r, 100))
        beat = await heartbeat()
      }
      expect(String(beat)).toMatch(ISO_UTC)
      if (before !== null) expect(Date.parse(String(beat))).toBeGreaterThan(Date.parse(String(before)))
    })
  })
})

describe("OpenAPI and docs", () => {
  let doc: any
  beforeAll(async () => {
    const res = await raw(`${server.baseUrl}/api/v1/merchant/openapi.json`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
    doc = res.json
  })

  /** The error codes a response's schema allows (through $ref and anyOf). */
  const codesOf = (schema: any): Array<string> => {
    if (schema === undefined) return []
    if (Array.isArray(schema.anyOf)) return schema.anyOf.flatMap(codesOf)
    if (Array.isArray(schema.oneOf)) return schema.oneOf.flatMap(codesOf)
    if (typeof schema.$ref === "string") {
      const name = schema.$ref.replace("#/components/schemas/", "")
      return codesOf(doc.components.schemas[name])
    }
    const code = schema.properties?.error?.properties?.code
    if (code === undefined) return []
    return code.enum ?? (code.const !== undefined ? [code.const] : [])
  }
  const responseCodes = (operation: any, status: string) => codesOf(operation.responses?.[status]?.content?.["application/json"]?.schema)

  it("is a valid OpenAPI 3.1 document, version 1.0.0 (spec 9)", async () => {
    const result = await new Validator().validate(doc)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/)
    expect(doc.info.version).toBe("1.0.0")
  })

  it("describes the balance and deposit endpoints under /api/v1/merchant", () => {
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
      "/api/v1/merchant/balance",
      "/api/v1/merchant/deposits",
      "/api/v1/merchant/deposits/fees"
    ]))
    for (const path of Object.keys(doc.paths)) expect(path.startsWith("/api/v1/merchant/") || path.startsWith("/cabinet/api/"), path).toBe(true)
    expect(doc.components.securitySchemes).toMatchObject({
      bearer: { type: "http", scheme: "bearer" },
      session: { type: "apiKey", in: "cookie", name: "mer_session" }
    })
  })

  it("every merchant API operation requires the bearer key (the deposit endpoints or the cabinet's session) and lists 401, 403 and 429 with their codes (spec 4, 5.6)", () => {
    for (const [path, item] of Object.entries(doc.paths) as Array<[string, any]>) {
      if (!path.startsWith("/api/v1/merchant/")) continue
      for (const [method, operation] of Object.entries(item) as Array<[string, any]>) {
        const where = `${method.toUpperCase()} ${path}`
        const security = path.startsWith("/api/v1/merchant/deposits") ? [{ bearer: [] }, { session: [] }] : [{ bearer: [] }]
        expect({ where, security: operation.security }).toEqual({ where, security })
        expect({ where, codes: responseCodes(operation, "401") }).toEqual({ where, codes: ["MERCHANT_API_KEY_MISSING"] })
        expect({ where, codes: responseCodes(operation, "403") }).toMatchObject({ where, codes: expect.arrayContaining(["MERCHANT_BLOCKED"]) })
        expect({ where, codes: responseCodes(operation, "429") }).toEqual({ where, codes: ["MERCHANT_RATE_LIMITED"] })
      }
    }
  })

  it("the cabinet's operations: the session ones take the cookie and list 401 CABINET_SESSION_REQUIRED; every one lists 403 MERCHANT_ORIGIN_NOT_ALLOWED (CONTRACT 7)", () => {
    const cabinet = Object.entries(doc.paths).filter(([path]) => path.startsWith("/cabinet/api/")) as Array<[string, any]>
    expect(cabinet.map(([path]) => path).sort()).toEqual([
      "/cabinet/api/api-key",
      "/cabinet/api/balance",
      "/cabinet/api/invite/complete",
      "/cabinet/api/invite/start",
      "/cabinet/api/login",
      "/cabinet/api/logout",
      "/cabinet/api/me",
      "/cabinet/api/purchases",
      "/cabinet/api/webhook",
      "/cabinet/api/webhook-events",
      "/cabinet/api/webhook-secret"
    ])
    const signIn = ["/cabinet/api/invite/complete", "/cabinet/api/invite/start", "/cabinet/api/login", "/cabinet/api/logout"]
    for (const [path, item] of cabinet) {
      for (const [method, operation] of Object.entries(item) as Array<[string, any]>) {
        const where = `${method.toUpperCase()} ${path}`
        if (signIn.includes(path)) {
          expect({ where, security: operation.security ?? [] }).toEqual({ where, security: [] })
          expect({ where, codes: responseCodes(operation, "403") }).toMatchObject({ where, codes: expect.arrayContaining(["MERCHANT_ORIGIN_NOT_ALLOWED"]) })
        } else {
          expect({ where, security: operation.security }).toEqual({ where, security: [{ session: [] }] })
          expect({ where, codes: responseCodes(operation, "401") }).toEqual({ where, codes: ["CABINET_SESSION_REQUIRED"] })
          if (method !== "get") {
            expect({ where, codes: responseCodes(operation, "403") }).toMatchObject({ where, codes: expect.arrayContaining(["MERCHANT_ORIGIN_NOT_ALLOWED"]) })
          }
        }
      }
    }
    expect(responseCodes(doc.paths["/cabinet/api/login"].post, "401")).toEqual(["CABINET_LOGIN_FAILED"])
    expect(responseCodes(doc.paths["/cabinet/api/invite/complete"].post, "409")).toEqual(["CABINET_LOGIN_TAKEN"])
  })

  it("teaches: every operation has a summary and a description, every parameter a description, every tag a description", () => {
    for (const [path, item] of Object.entries(doc.paths) as Array<[string, any]>) {
      for (const [method, operation] of Object.entries(item) as Array<[string, any]>) {
        const where = `${method.toUpperCase()} ${path}`
        expect(typeof operation.summary === "string" && operation.summary.length > 0, `${where} summary`).toBe(true)
        expect(typeof operation.description === "string" && operation.description.length > 20, `${where} description`).toBe(true)
        for (const parameter of operation.parameters ?? []) expect(parameter.description, `${where} ${parameter.name}`).toMatch(/\S/)
      }
    }
    for (const tag of doc.tags) expect(tag.description, tag.name).toMatch(/\S/)
    expect(JSON.stringify(doc)).not.toMatch(/CONTRACT|\.\.\/shared/)
  })

  it("describes the eight webhook events under OpenAPI 3.1 webhooks, with their signed headers and payloads", () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      "balance.deposited",
      "purchase.completed",
      "purchase.created",
      "purchase.failed",
      "purchase.processing",
      "purchase.refunded",
      "purchase.reverted",
      "purchase.sent_to_steam"
    ])
    for (const [type, item] of Object.entries(doc.webhooks) as Array<[string, any]>) {
      expect(item.post.parameters.map((p: any) => p.name)).toEqual(expect.arrayContaining(["X-Signature", "X-Timestamp", "X-Event-Id", "X-Event"]))
      const body = item.post.requestBody.content["application/json"].schema
      expect(body.properties.event_type.enum).toEqual([type])
      expect(body.required).toEqual(["event_id", "event_type", "created_at", "data"])
    }
  })

  it("GET /deposits lists 400 MERCHANT_INVALID_QUERY, and no framework decode error anywhere", () => {
    const list = doc.paths["/api/v1/merchant/deposits"].get
    expect(responseCodes(list, "400")).toEqual(["MERCHANT_INVALID_QUERY"])
    expect(Object.keys(list.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "429"]))
    expect(JSON.stringify(doc)).not.toContain("HttpApiDecodeError")
    // The query parameters of spec 4.1.
    expect(list.parameters.map((p: any) => [p.name, p.in, p.required])).toEqual(
      expect.arrayContaining([["cursor", "query", false], ["limit", "query", false]])
    )
  })

  it("documents limit as an integer from 1 to 200 (spec 4.1, 8)", () => {
    const limit = doc.paths["/api/v1/merchant/deposits"].get.parameters.find((p: any) => p.name === "limit")
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 200 })
  })

  it("the 200 schemas match the spec's resources", () => {
    const ref = (path: string) => doc.paths[path].get.responses["200"].content["application/json"].schema.$ref.replace("#/components/schemas/", "")
    const balance = doc.components.schemas[ref("/api/v1/merchant/balance")]
    expect(balance.required).toEqual(expect.arrayContaining(["available", "on_hold", "total_deposited", "total_spent", "currency", "deposit_addresses"]))
    const fees = doc.components.schemas[ref("/api/v1/merchant/deposits/fees")]
    expect(fees.required).toEqual(expect.arrayContaining(["currency", "tiers"]))
    const list = doc.components.schemas[ref("/api/v1/merchant/deposits")]
    expect(list.required).toEqual(expect.arrayContaining(["deposits", "next_cursor"]))
  })

  it("declares the headers: X-Request-Id everywhere, the rate-limit headers, Retry-After on 429, the dump's snapshot headers", () => {
    for (const [path, item] of Object.entries(doc.paths) as Array<[string, any]>) {
      for (const [method, operation] of Object.entries(item) as Array<[string, any]>) {
        for (const [status, response] of Object.entries(operation.responses) as Array<[string, any]>) {
          const where = `${method.toUpperCase()} ${path} ${status}`
          const names = Object.keys(response.headers ?? {})
          expect({ where, names }).toEqual({ where, names: expect.arrayContaining(["X-Request-Id"]) })
          if (status === "200" || status === "429") {
            expect({ where, names }).toEqual({ where, names: expect.arrayContaining(["X-RateLimit-Limit", "X-RateLimit-Remaining"]) })
          }
          if (status === "429") expect({ where, names }).toEqual({ where, names: expect.arrayContaining(["Retry-After"]) })
        }
      }
    }
    const dump = doc.paths["/api/v1/merchant/items/full-dump"].get.responses
    expect(Object.keys(dump["200"].headers)).toEqual(expect.arrayContaining(["ETag", "Last-Modified", "X-Items-Count", "X-Catalog-Cursor", "X-Catalog-Epoch"]))
    expect(Object.keys(dump["304"].headers)).toEqual(expect.arrayContaining(["ETag", "X-Catalog-Cursor", "X-Catalog-Epoch"]))
  })

  it("types what the spec types: timestamps date-time, price and float bounds numbers, the buy body's rules; objects stay open", () => {
    const schemas = doc.components.schemas
    expect(schemas.PurchaseDetail.properties.created_at).toMatchObject({ type: "string", format: "date-time" })
    expect(JSON.stringify(schemas.PurchaseDetail.properties.completed_at)).toContain("date-time")
    expect(schemas.DepositItem.properties.created_at).toMatchObject({ format: "date-time" })
    expect(schemas.CatalogFullDump.properties.generated_at).toMatchObject({ format: "date-time" })
    const param = (path: string, name: string) => doc.paths[path].get.parameters.find((p: any) => p.name === name).schema
    expect(param("/api/v1/merchant/items", "min_price")).toMatchObject({ type: "number", minimum: 0 })
    expect(param("/api/v1/merchant/items", "max_float")).toMatchObject({ type: "number", minimum: 0, maximum: 1 })
    expect(param("/api/v1/merchant/items/search", "max_price")).toMatchObject({ type: "number", minimum: 0 })
    expect(param("/api/v1/merchant/purchases", "from")).toMatchObject({ type: "string", format: "date-time" })
    expect(schemas.BuyRequest.properties.custom_id).toMatchObject({ minLength: 1, maxLength: 100 })
    expect(schemas.BuyRequest.properties.max_price).toMatchObject({ exclusiveMinimum: 0 })
    // the document is as strict as the handlers: no nil item_id, the trade URL and SteamID64 rules (CONTRACT 5.1)
    const ajv = new Ajv2020({ strict: false })
    ;(formats as unknown as { default: (ajv: Ajv2020) => void }).default(ajv)
    ajv.addSchema(doc, "doc")
    const validBuy = ajv.getSchema("doc#/components/schemas/BuyRequest")!
    const buy = {
      item_id: randomUUID(),
      max_price: 1,
      custom_id: "x",
      target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=4294967295&token=abcdEFGH",
      target_steam_id: "76561202255233023"
    }
    expect(validBuy(buy)).toBe(true)
    for (
      const wrong of [
        { item_id: "00000000-0000-0000-0000-000000000000" },
        { target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=4294967296&token=abcdEFGH" },
        { target_trade_url: "https://steamcommunity.com/tradeoffer/new/?token=abcdEFGH&partner=1" },
        { target_steam_id: "76561197960265728" },
        { target_steam_id: "76561202255233024" }
      ]
    ) expect({ wrong, valid: validBuy({ ...buy, ...wrong }) }).toEqual({ wrong, valid: false })
    expect(schemas.BuyByNameRequest.properties.trade_url.pattern).toBe(schemas.BuyRequest.properties.target_trade_url.pattern)
    expect(JSON.stringify(doc)).not.toContain("\"additionalProperties\":false")
    for (const path of ["/api/v1/merchant/buy", "/api/v1/merchant/buy-sync", "/api/v1/merchant/buy-by-name"]) {
      const responses = doc.paths[path].post.responses
      expect(responses["400"].content["application/problem+json"].schema).toEqual({ $ref: "#/components/schemas/ProblemDetails" })
      expect(responses["413"].content["application/problem+json"].schema).toEqual({ $ref: "#/components/schemas/ProblemDetails" })
    }
  })

  it("real responses, successes and errors, are what the document declares for their status and media type", async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true }) // a CommonJS module's default export, as TypeScript sees it from ESM
    ;(formats as unknown as { default: (ajv: Ajv2020) => void }).default(ajv)
    ajv.addSchema(doc, "doc")
    const pointer = (...parts: Array<string>) => parts.map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/")
    const check = async (method: string, path: string, init: { body?: unknown; raw?: string; key?: string | null } = {}): Promise<any> => {
      const res = await fetch(`${server.baseUrl}/api/v1/merchant${path}`, {
        method,
        headers: {
          ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? merchant.apiKey}` }),
          ...(init.body !== undefined || init.raw !== undefined ? { "content-type": "application/json" } : {})
        },
        ...(init.raw !== undefined ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
      })
      const media = (res.headers.get("content-type") ?? "").split(";")[0]!
      const body: any = await res.json()
      const template = Object.keys(doc.paths).find((p) => new RegExp(`^${p.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(`/api/v1/merchant${path.split("?")[0]}`))!
      const where = `${method} ${path} ${res.status} ${media}`
      const declared = doc.paths[template][method.toLowerCase()].responses[String(res.status)]?.content?.[media]
      expect({ where, declared: declared !== undefined }).toEqual({ where, declared: true })
      const validate = ajv.getSchema(`doc#/${pointer("paths", template, method.toLowerCase(), "responses", String(res.status), "content", media, "schema")}`)!
      expect({ where, valid: validate(body), errors: validate.errors ?? null }).toEqual({ where, valid: true, errors: null })
      return body
    }
    await server.deposit(merchant.id, 100)
    await check("GET", "/balance")
    await check("GET", "/deposits")
    await check("GET", "/deposits/fees")
    const items = (await check("GET", "/items?limit=3")).items
    await check("GET", `/items/search?market_hash_name=${encodeURIComponent(items[0].market_hash_name)}`)
    const tradeUrl = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
    const cheapest = (await check("GET", "/items?limit=1&sort=price_asc")).items[0]
    const bought = await check("POST", "/buy", {
      body: { item_id: cheapest.id, max_price: cheapest.price, custom_id: `oa-${randomUUID()}`, target_trade_url: tradeUrl }
    })
    await check("GET", `/purchases/${bought.purchase_id}`)
    await check("GET", "/purchases")
    await check("GET", "/webhook-events")
    // errors: a field's code, problem details, 401, 404, 402
    await check("POST", "/buy", { body: { item_id: "nope", max_price: 1, custom_id: "x", target_trade_url: tradeUrl } })
    await check("POST", "/buy", { raw: "{not json" })
    await check("POST", "/buy-by-name", { raw: "" })
    await check("GET", "/balance", { key: null })
    await check("GET", `/purchases/${randomUUID()}`)
    await check("GET", "/items?limit=0")
    await check("GET", "/items?sort=sideways")
    // the buys that answer through the handlers' own bodies: 200 or 202, and PurchaseFailedResponse
    // (a private inventory is rejected before the offer; whichever answer comes is checked)
    const rejectedUrl = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=private0"
    const [second, ...others] = (await check("GET", "/items?limit=8&sort=price_asc")).items.slice(1)
    await check("POST", "/buy-sync", { body: { item_id: second.id, max_price: second.price, custom_id: `oa-${randomUUID()}`, target_trade_url: tradeUrl } })
    // the simulator's churn may delist or reprice an item between the list and the buy: the next one then
    for (const item of others) {
      const rejected = await check("POST", "/buy-sync", {
        body: { item_id: item.id, max_price: item.price, custom_id: `oa-${randomUUID()}`, target_trade_url: rejectedUrl }
      })
      const code = rejected.error?.code
      if (code === "MERCHANT_ITEM_UNAVAILABLE" || code === "MERCHANT_PRICE_CHANGED") continue
      if (code !== undefined && code !== "MERCHANT_INSUFFICIENT_BALANCE") {
        expect(rejected).toMatchObject({ error: { code: "MERCHANT_PURCHASE_FAILED" }, failure: { code: "INVENTORY_PRIVATE" } })
      }
      break
    }
    await check("POST", "/buy-by-name", {
      body: { market_hash_name: items[0].market_hash_name, max_price: 1_000_000, custom_id: `oa-${randomUUID()}`, trade_url: tradeUrl }
    })
    await check("POST", "/buy-by-name", {
      body: { market_hash_name: `no such item ${randomUUID()}`, max_price: 1, custom_id: `oa-${randomUUID()}`, trade_url: tradeUrl }
    })
    const dear = (await check("GET", "/items?limit=1&sort=price_desc")).items[0]
    await check("POST", "/buy", { body: { item_id: dear.id, max_price: dear.price, custom_id: `oa-${randomUUID()}`, target_trade_url: tradeUrl } })
  })

  it("the docs page is served as HTML without a key", async () => {
    const res = await raw(`${server.baseUrl}/docs`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type") ?? "").toMatch(/^text\/html/)
    expect(res.text).toMatch(/<html/i)
    expect(res.text).toContain("Merchant Purchasing API")
  })
})
