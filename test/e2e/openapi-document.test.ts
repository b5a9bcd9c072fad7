/**
 * The API's documents as the service serves them: the merchant API's OpenAPI 3.1 document (valid,
 * with every operation's security, error codes, headers and types as the spec states them, and the
 * webhooks), the admin API's under the admin token, and the docs page. That real answers are what
 * the document declares: errors.test.ts.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AdminDocument, expectAdminError, PathsOnly } from "../support/admin.js"
import { documentAjv, responseCodes } from "../support/openapi.js"
import { request, type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server?.stop()
})

/** A GET of any URL as sent. */
const raw = (url: string) => request(url, {})

describe("the merchant API's OpenAPI document and docs page", () => {
  let doc: any
  beforeAll(async () => {
    const res = await raw(`${server.baseUrl}/api/v1/merchant/openapi.json`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
    doc = res.json
  })

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
        expect({ where, codes: responseCodes(doc, operation, "401") }).toEqual({ where, codes: ["MERCHANT_API_KEY_MISSING"] })
        expect({ where, codes: responseCodes(doc, operation, "403") }).toMatchObject({ where, codes: expect.arrayContaining(["MERCHANT_BLOCKED"]) })
        expect({ where, codes: responseCodes(doc, operation, "429") }).toEqual({ where, codes: ["MERCHANT_RATE_LIMITED"] })
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
          expect({ where, codes: responseCodes(doc, operation, "403") }).toMatchObject({
            where,
            codes: expect.arrayContaining(["MERCHANT_ORIGIN_NOT_ALLOWED"])
          })
        } else {
          expect({ where, security: operation.security }).toEqual({ where, security: [{ session: [] }] })
          expect({ where, codes: responseCodes(doc, operation, "401") }).toEqual({ where, codes: ["CABINET_SESSION_REQUIRED"] })
          if (method !== "get") {
            expect({ where, codes: responseCodes(doc, operation, "403") }).toMatchObject({
              where,
              codes: expect.arrayContaining(["MERCHANT_ORIGIN_NOT_ALLOWED"])
            })
          }
        }
      }
    }
    expect(responseCodes(doc, doc.paths["/cabinet/api/login"].post, "401")).toEqual(["CABINET_LOGIN_FAILED"])
    expect(responseCodes(doc, doc.paths["/cabinet/api/invite/complete"].post, "409")).toEqual(["CABINET_LOGIN_TAKEN"])
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
    expect(responseCodes(doc, list, "400")).toEqual(["MERCHANT_INVALID_QUERY"])
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
    const ajv = documentAjv(doc)
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

  it("the docs page is served as HTML without a key", async () => {
    const res = await raw(`${server.baseUrl}/docs`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type") ?? "").toMatch(/^text\/html/)
    expect(res.text).toMatch(/<html/i)
    expect(res.text).toContain("Merchant Purchasing API")
  })
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
