/**
 * The merchant cabinet's session over real sockets (CONTRACT 7): the Origin rule, where the session
 * cookie is accepted, key regeneration, webhook settings, the ways a session ends, and hostile
 * input. Onboarding and sign-in: cabinet-sign-in.test.ts; session lifetimes and the per-address
 * sign-in budget: cabinet-session-limits.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { Profile } from "../../src/Cabinet/Api.js"
import { DepositWalletList } from "../../src/Deposits/Api.js"
import { ApiKeyIssued, WebhookSecretIssued } from "../../src/Ops/AdminApi.js"
import { WebhookEventList } from "../../src/Webhooks/Api.js"
import { AuthenticatorApp, cabinet, invite, InviteStarted, keyWorks, merchantApi, onboard, profileOf, sessionWalletsOf } from "../support/cabinet.js"
import { bodyOf, codeOf, field } from "../support/expectations.js"
import { upgradeStatus } from "../support/feed.js"
import { type RunningServer, startServer } from "../support/server.js"

// a code is accepted once per merchant: a test that needs a third code waits for the clock (up to 30 s)
vi.setConfig({ testTimeout: 120_000 })

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: { WALLET_ISSUANCE_ENABLED: "true" } })
})
afterAll(async () => {
  await server?.stop()
})

describe("the Origin rule", () => {
  it("sign-in, sign-out and invite calls need an allowed Origin, with or without a cookie; nothing changes without one", async () => {
    const m = await onboard(server)
    for (const origin of [null, "https://evil.example", `${server.baseUrl}.evil.example`]) {
      const login = await cabinet(server, "/login", { method: "POST", origin, body: { login: m.login, password: m.password, code: m.app.wrong() } })
      expect([login.status, codeOf(login)]).toEqual([403, "MERCHANT_ORIGIN_NOT_ALLOWED"])
      expect(login.cookie).toBeUndefined()
      const logout = await cabinet(server, "/logout", { method: "POST", origin, cookie: m.cookie })
      expect([logout.status, codeOf(logout)]).toEqual([403, "MERCHANT_ORIGIN_NOT_ALLOWED"])
      const start = await cabinet(server, "/invite/start", { method: "POST", origin, body: { token: "x" } })
      expect([start.status, codeOf(start)]).toEqual([403, "MERCHANT_ORIGIN_NOT_ALLOWED"])
    }
    // the session lived through the refused logouts
    expect((await cabinet(server, "/me", { cookie: m.cookie, origin: null })).status).toBe(200)
  })

  it("every change the cookie can make is refused without an allowed Origin, before its body or code is looked at", async () => {
    const m = await onboard(server)
    const walletId = "6f2b0c1e-8d4a-4b7e-9c3f-2a1d5e6f7a8b"
    const changes: Array<[string, string, unknown, "cabinet" | "api"]> = [
      ["POST", "/api-key", { code: await m.app.code() }, "cabinet"],
      ["PUT", "/webhook", { url: "https://x.example/h" }, "cabinet"],
      ["POST", "/webhook-secret", { code: m.app.last() }, "cabinet"],
      ["POST", "/logout", undefined, "cabinet"],
      ["POST", "/invite/start", { token: "t" }, "cabinet"],
      ["POST", "/invite/complete", { token: "t", login: "a@b.example", password: "long enough password", code: m.app.last() }, "cabinet"],
      ["POST", "/login", { login: m.login, password: m.password, code: m.app.last() }, "cabinet"],
      ["POST", "/deposits/wallets", { network: "bsc" }, "api"],
      ["POST", `/deposits/wallets/${walletId}/reconcile`, undefined, "api"]
    ]
    for (const [method, path, body, where] of changes) {
      for (const origin of [null, "http://127.0.0.1:1"]) {
        const send = where === "cabinet" ? cabinet : merchantApi
        const res = await send(server, path, { method, origin, cookie: m.cookie, ...(body !== undefined ? { body } : {}) })
        expect([res.status, codeOf(res)], `${method} ${path} from ${origin}`).toEqual([403, "MERCHANT_ORIGIN_NOT_ALLOWED"])
      }
    }
    // nothing changed, and the code sent with the refused key request is still unused
    await keyWorks(server, m.merchant.apiKey)
    expect((await profileOf(server, { cookie: m.cookie })).webhook_url).toBeNull()
    const key = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: m.app.last() } })
    expect(key.status, key.text).toBe(201)
  })

  it("a cookie-authenticated change needs an allowed Origin (a wallet request creates nothing without one); reads do not", async () => {
    const m = await onboard(server)
    const refused = await merchantApi(server, "/deposits/wallets", { method: "POST", origin: null, cookie: m.cookie, body: { network: "tron" } })
    expect([refused.status, codeOf(refused)]).toEqual([403, "MERCHANT_ORIGIN_NOT_ALLOWED"])
    const webhook = await cabinet(server, "/webhook", { method: "PUT", origin: "https://evil.example", cookie: m.cookie, body: { url: "https://x.example/h" } })
    expect([webhook.status, codeOf(webhook)]).toEqual([403, "MERCHANT_ORIGIN_NOT_ALLOWED"])
    const listed = await merchantApi(server, "/deposits/wallets", { origin: null, cookie: m.cookie })
    expect(listed.status, listed.text).toBe(200)
    expect(bodyOf(listed, DepositWalletList).wallets).toEqual([])
    expect((await profileOf(server, { origin: null, cookie: m.cookie })).webhook_url).toBeNull()
    // with the Origin, the same request is made (200, or 502 for the merchants whose creation answer the simulator loses)
    const made = await merchantApi(server, "/deposits/wallets", { method: "POST", cookie: m.cookie, body: { network: "tron" } })
    expect([200, 502], made.text).toContain(made.status)
    expect(await sessionWalletsOf(server, { cookie: m.cookie })).toMatchObject([{ network: "tron" }])
  })
})

describe("where the session is accepted", () => {
  it("on the deposit endpoints and the cabinet only; elsewhere the cookie is ignored, and a key decides when both come", async () => {
    const m = await onboard(server)
    for (const path of ["/deposits", "/deposits/fees", "/deposits/wallets"]) {
      const res = await merchantApi(server, path, { cookie: m.cookie })
      expect(res.status, `${path}: ${res.text}`).toBe(200)
    }
    for (const path of ["/balance", "/items?limit=1", "/purchases", "/webhook-events"]) {
      const res = await merchantApi(server, path, { cookie: m.cookie })
      expect([res.status, codeOf(res)], path).toEqual([401, "MERCHANT_API_KEY_MISSING"])
    }
    const wrongKey = await merchantApi(server, "/deposits", { cookie: m.cookie, key: "mer_live_0000000000000000000000000000000A" })
    expect([wrongKey.status, codeOf(wrongKey)]).toEqual([401, "MERCHANT_API_KEY_MISSING"])
    const noSession = await merchantApi(server, "/deposits", { cookie: "mer_session=forged" })
    expect([noSession.status, codeOf(noSession)]).toEqual([401, "MERCHANT_API_KEY_MISSING"])
    // the feed's upgrade takes neither the cookie nor a key in the query string
    for (const [query, headers] of [["", { cookie: m.cookie }], [`?api_key=${m.merchant.apiKey}`, {}], [`?key=${m.merchant.apiKey}`, {}]] as const) {
      expect(await upgradeStatus(`${server.baseUrl.replace("http", "ws")}/api/v1/merchant/items/stream${query}`, headers)).toBe(401)
    }
    // the same upgrade with the key passes authentication (and is refused for its missing cursor)
    expect(await upgradeStatus(`${server.baseUrl.replace("http", "ws")}/api/v1/merchant/items/stream`, { authorization: `Bearer ${m.merchant.apiKey}` })).toBe(
      400
    )
    // the cabinet's own endpoints take the session only
    const byKey = await cabinet(server, "/me", { key: m.merchant.apiKey })
    expect([byKey.status, codeOf(byKey)]).toEqual([401, "CABINET_SESSION_REQUIRED"])
  })

  it("the cabinet's balance, purchases and webhook log are the merchant API's, for the session's merchant", async () => {
    const m = await onboard(server)
    await server.deposit(m.merchant.id, 102.5)
    const viaSession = await cabinet(server, "/balance", { cookie: m.cookie })
    const viaKey = await keyWorks(server, m.merchant.apiKey)
    expect(viaSession.status).toBe(200)
    expect(viaSession.json).toEqual(viaKey)
    const events = await cabinet(server, "/webhook-events?limit=5", { cookie: m.cookie })
    expect(events.status).toBe(200)
    expect(bodyOf(events, WebhookEventList).events.map((e) => e.event_type)).toEqual(["balance.deposited"])
    const purchases = await cabinet(server, "/purchases?status=completed", { cookie: m.cookie })
    expect([purchases.status, purchases.json]).toEqual([200, { purchases: [], next_cursor: null }])
    const badFilter = await cabinet(server, "/purchases?status=nope", { cookie: m.cookie })
    expect([badFilter.status, codeOf(badFilter)]).toEqual([400, "MERCHANT_INVALID_STATUS"])
  })
})

describe("keys, webhook settings and the end of a session", () => {
  it("a new API key needs a fresh code, is shown once, and stops the previous key at once", async () => {
    const m = await onboard(server)
    const noCode = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: m.app.last() } })
    expect([noCode.status, codeOf(noCode)]).toEqual([400, "CABINET_CODE_INVALID"])
    await keyWorks(server, m.merchant.apiKey)
    const issued = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: await m.app.code() } })
    expect(issued.status, issued.text).toBe(201)
    const { api_key } = bodyOf(issued, ApiKeyIssued)
    expect(api_key).toMatch(/^mer_live_[A-Za-z0-9_-]{32}$/)
    expect((await server.api("/balance", { key: m.merchant.apiKey })).status).toBe(401)
    await keyWorks(server, api_key)
    expect((await profileOf(server, { cookie: m.cookie })).api_key_last4).toBe(api_key.slice(-4))
  })

  it("the webhook URL is checked and saved; a new secret needs a fresh code and may keep the previous one", async () => {
    const m = await onboard(server)
    for (const url of ["ftp://x.example/h", "not a url", `https://x.example/${"a".repeat(2048)}`]) {
      const res = await cabinet(server, "/webhook", { method: "PUT", cookie: m.cookie, body: { url } })
      expect([res.status, codeOf(res)], url.slice(0, 20)).toEqual([400, "CABINET_WEBHOOK_URL_INVALID"])
    }
    const set = await cabinet(server, "/webhook", { method: "PUT", cookie: m.cookie, body: { url: "https://hooks.shop.example/skins" } })
    expect([set.status, bodyOf(set, Profile).webhook_url]).toEqual([200, "https://hooks.shop.example/skins"])
    const cleared = await cabinet(server, "/webhook", { method: "PUT", cookie: m.cookie, body: { url: null } })
    expect([cleared.status, bodyOf(cleared, Profile).webhook_url]).toEqual([200, null])

    const secret = await cabinet(server, "/webhook-secret", {
      method: "POST",
      cookie: m.cookie,
      body: { code: await m.app.code(), previous_valid_seconds: 60 }
    })
    expect(secret.status, secret.text).toBe(201)
    const { webhook_secret } = bodyOf(secret, WebhookSecretIssued)
    expect(webhook_secret).toMatch(/^whsec_/)
    expect(webhook_secret).not.toBe(m.merchant.webhookSecret)
    const replay = await cabinet(server, "/webhook-secret", { method: "POST", cookie: m.cookie, body: { code: m.app.last() } })
    expect([replay.status, codeOf(replay)]).toEqual([400, "CABINET_CODE_INVALID"])
  })

  it("logout ends the session; a new invite completed ends every session but keeps the key", async () => {
    const m = await onboard(server)
    const second = await cabinet(server, "/login", { method: "POST", body: { login: m.login, password: m.password, code: await m.app.code() } })
    expect(second.status).toBe(204)
    const out = await cabinet(server, "/logout", { method: "POST", cookie: second.cookie })
    expect(out.status).toBe(204)
    expect(out.headers.getSetCookie()[0]).toMatch(/^mer_session=; .*Max-Age=0/)
    expect(codeOf(await cabinet(server, "/me", { cookie: second.cookie }))).toBe("CABINET_SESSION_REQUIRED")
    expect((await cabinet(server, "/me", { cookie: m.cookie })).status).toBe(200)

    const token = await invite(server, m.merchant.id)
    const started = await cabinet(server, "/invite/start", { method: "POST", body: { token } })
    const app = new AuthenticatorApp(bodyOf(started, InviteStarted).totp_secret)
    const done = await cabinet(server, "/invite/complete", {
      method: "POST",
      body: { token, login: m.login, password: "a brand new password", code: await app.code() }
    })
    expect(done.status, done.text).toBe(201)
    expect(codeOf(await cabinet(server, "/me", { cookie: m.cookie }))).toBe("CABINET_SESSION_REQUIRED")
    expect((await cabinet(server, "/me", { cookie: done.cookie })).status).toBe(200)
    await keyWorks(server, m.merchant.apiKey)
    // the old password no longer signs in
    const old = await cabinet(server, "/login", { method: "POST", body: { login: m.login, password: m.password, code: await app.code() } })
    expect(old.status).toBe(401)
  })
})

describe("hostile input", () => {
  it("text the database cannot hold, bodies that are not JSON and oversized fields get the Error shape and change nothing", async () => {
    const m = await onboard(server)
    const nulLogin = await cabinet(server, "/login", { method: "POST", body: { login: "a\u0000@b.example", password: m.password, code: "123456" } })
    expect([nulLogin.status, codeOf(nulLogin)]).toEqual([401, "CABINET_LOGIN_FAILED"])
    const unknown = await cabinet(server, "/login", { method: "POST", body: { login: "nobody@b.example", password: m.password, code: "123456" } })
    expect(nulLogin.text).toBe(unknown.text)
    const surrogate = await cabinet(server, "/login", { method: "POST", body: { login: "\ud800@b.example", password: m.password, code: "123456" } })
    expect([surrogate.status, codeOf(surrogate)]).toEqual([401, "CABINET_LOGIN_FAILED"])
    const nulUrl = await cabinet(server, "/webhook", { method: "PUT", cookie: m.cookie, body: { url: "https://x.example/\u0000" } })
    expect([nulUrl.status, codeOf(nulUrl)]).toEqual([400, "CABINET_WEBHOOK_URL_INVALID"])
    const huge = await cabinet(server, "/login", { method: "POST", body: { login: m.login, password: "p".repeat(5_000), code: "123456" } })
    expect([huge.status, codeOf(huge)]).toEqual([400, "MERCHANT_INVALID_QUERY"])
    const wrongType = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: 123456 } })
    expect([wrongType.status, codeOf(wrongType)]).toEqual([400, "MERCHANT_INVALID_QUERY"])
    const notJson = await fetch(`${server.baseUrl}/cabinet/api/login`, {
      method: "POST",
      headers: { origin: server.baseUrl, "content-type": "application/json" },
      body: "{not json"
    })
    expect(notJson.status).toBe(400)
    expect(field(await notJson.json(), "error", "code")).toBe("MERCHANT_MALFORMED_JSON")
    const empty = await cabinet(server, "/webhook", { method: "PUT", cookie: m.cookie })
    expect([empty.status, codeOf(empty)]).toEqual([400, "MERCHANT_MALFORMED_JSON"])
    const me = await cabinet(server, "/me", { cookie: m.cookie })
    expect([me.status, field(me.json, "webhook_url"), field(me.json, "api_key_last4")]).toEqual([200, null, m.merchant.apiKey.slice(-4)])
    // still signs in: none of it counted as five failures of this login (two did, for other logins)
    const ok = await cabinet(server, "/login", { method: "POST", body: { login: m.login, password: m.password, code: await m.app.code() } })
    expect(ok.status, ok.text).toBe(204)
  })
})
