/**
 * Getting into the merchant cabinet over real sockets (CONTRACT 7): invite onboarding with a TOTP
 * second factor, what is refused on the way and stored only as hashes, sign-in and its lockout, and
 * what an inactive or blocked merchant may still do.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { Profile } from "../../src/Cabinet/Api.js"
import { AuthenticatorApp, cabinet, invite, InviteStarted, keyWorks, merchantApi, onboard, profileOf, sessionWalletsOf } from "../support/cabinet.js"
import { serverRows } from "../support/database.js"
import { bodyOf, codeOf } from "../support/expectations.js"
import { type RunningServer, setMerchantStatus, startServer } from "../support/server.js"

// a code is accepted once per merchant: a test that needs a third code waits for the clock (up to 30 s)
vi.setConfig({ testTimeout: 120_000 })

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: { WALLET_ISSUANCE_ENABLED: "true" } })
})
afterAll(async () => {
  await server?.stop()
})

describe("onboarding by invite", () => {
  it("an invite gives one secret on every start; completing signs in with exactly the contract's cookie and keeps the API key", async () => {
    const merchant = await server.createMerchant()
    const issued = await server.adminApi.call((client) => client.merchants.inviteMerchant({ path: { id: merchant.id } }))
    expect(issued.invite_url).toMatch(new RegExp(`^${server.baseUrl}/cabinet/invite#[A-Za-z0-9_-]{43,}$`))
    expect(Date.parse(issued.expires_at) - Date.now()).toBeGreaterThan(71.9 * 3600_000)
    const token = issued.invite_url.split("#")[1]!

    const first = await cabinet(server, "/invite/start", { method: "POST", body: { token } })
    const second = await cabinet(server, "/invite/start", { method: "POST", body: { token } })
    expect(first.status, first.text).toBe(200)
    const started = bodyOf(first, InviteStarted)
    expect(started.totp_secret).toMatch(/^[A-Z2-7]{32}$/)
    expect(second.json).toEqual(first.json)
    expect(started.otpauth_uri).toMatch(/^otpauth:\/\/totp\/.*secret=[A-Z2-7]+.*/)
    expect(started.otpauth_uri).toContain("algorithm=SHA1")

    const app = new AuthenticatorApp(started.totp_secret)
    const done = await cabinet(server, "/invite/complete", {
      method: "POST",
      body: { token, login: "Owner@Shop.example", password: "twelve chars!", code: await app.code() }
    })
    expect(done.status, done.text).toBe(201)
    expect(done.json).toEqual({ merchant_id: merchant.id, login: "Owner@Shop.example" })
    const setCookie = done.headers.getSetCookie()
    expect(setCookie).toHaveLength(1)
    expect(setCookie[0]).toMatch(/^mer_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/$/)

    const me = await cabinet(server, "/me", { cookie: done.cookie })
    expect(me.status, me.text).toBe(200)
    expect(me.json).toMatchObject({
      merchant_id: merchant.id,
      login: "Owner@Shop.example",
      status: "active",
      api_key_last4: merchant.apiKey.slice(-4)
    })
    expect(Object.keys(bodyOf(me, Profile)).sort()).toEqual(["api_key_created_at", "api_key_last4", "login", "merchant_id", "name", "status", "webhook_url"])
    // the API key is not changed by onboarding
    await keyWorks(server, merchant.apiKey)
    // single use
    const reused = await cabinet(server, "/invite/start", { method: "POST", body: { token } })
    expect([reused.status, codeOf(reused)]).toEqual([400, "CABINET_INVITE_INVALID"])
  })

  it("refuses unknown and voided invites, weak passwords, wrong codes and a login another merchant has, and stores only hashes", async () => {
    const unknown = await cabinet(server, "/invite/start", { method: "POST", body: { token: "not-a-token" } })
    expect([unknown.status, codeOf(unknown)]).toEqual([400, "CABINET_INVITE_INVALID"])

    const taken = await onboard(server)
    const merchant = await server.createMerchant()
    const voided = await invite(server, merchant.id)
    const token = await invite(server, merchant.id)
    const old = await cabinet(server, "/invite/start", { method: "POST", body: { token: voided } })
    expect([old.status, codeOf(old)]).toEqual([400, "CABINET_INVITE_INVALID"])
    const started = await cabinet(server, "/invite/start", { method: "POST", body: { token } })
    const app = new AuthenticatorApp(bodyOf(started, InviteStarted).totp_secret)
    const complete = (body: object) => cabinet(server, "/invite/complete", { method: "POST", body: { token, ...body } })

    const weak = await complete({ login: "a@b.example", password: "short", code: await app.code() })
    expect([weak.status, codeOf(weak)]).toEqual([400, "CABINET_WEAK_PASSWORD"])
    const wrongCode = await complete({ login: "a@b.example", password: "long enough password", code: app.wrong() })
    expect([wrongCode.status, codeOf(wrongCode)]).toEqual([400, "CABINET_CODE_INVALID"])
    const stale = await complete({ login: "a@b.example", password: "long enough password", code: app.stale() })
    expect([stale.status, codeOf(stale)]).toEqual([400, "CABINET_CODE_INVALID"])
    const notEmail = await complete({ login: "not an email", password: "long enough password", code: app.last() })
    expect([notEmail.status, codeOf(notEmail)]).toEqual([400, "MERCHANT_INVALID_QUERY"])
    const sameLogin = await complete({ login: taken.login.toUpperCase(), password: "long enough password", code: app.last() })
    expect([sameLogin.status, codeOf(sameLogin)]).toEqual([409, "CABINET_LOGIN_TAKEN"])
    // none of the refusals used the invite up
    const done = await complete({ login: "b@b.example", password: "long enough password", code: app.last() })
    expect(done.status, done.text).toBe(201)

    const db = await serverRows(
      server.database,
      `SELECT l.password_hash, s.id_hash FROM cabinet_logins l JOIN cabinet_sessions s USING (merchant_id) WHERE l.merchant_id = '${merchant.id}'`
    )
    if (db !== undefined) {
      expect(db[0].password_hash).toMatch(/^scrypt\$32768\$8\$3\$/)
      expect(db[0].password_hash).not.toContain("long enough password")
      expect(db[0].id_hash).not.toBe(done.cookie!.split("=")[1])
      expect(db[0].id_hash).toMatch(/^[0-9a-f]{64}$/)
    }
  })
})

describe("signing in", () => {
  it("password and a fresh code sign in; a replayed code, a wrong password and an unknown login get one identical 401", async () => {
    const m = await onboard(server)
    const login = (body: object) => cabinet(server, "/login", { method: "POST", body })
    const code = await m.app.code()
    const wrongPassword = await login({ login: m.login, password: "not the password", code })
    // the wrong password did not use its code up: the same code signs in
    const ok = await login({ login: m.login.toUpperCase(), password: m.password, code })
    expect(ok.status, ok.text).toBe(204)
    expect(ok.cookie).toMatch(/^mer_session=/)
    expect((await cabinet(server, "/me", { cookie: ok.cookie })).status).toBe(200)
    const replayed = await login({ login: m.login, password: m.password, code })
    const unknown = await login({ login: "nobody@nowhere.example", password: m.password, code: "123456" })
    for (const res of [replayed, wrongPassword, unknown]) {
      expect(res.status).toBe(401)
      expect(res.cookie).toBeUndefined()
    }
    expect(replayed.text).toBe(unknown.text)
    expect(wrongPassword.text).toBe(unknown.text)
    expect(codeOf(unknown)).toBe("CABINET_LOGIN_FAILED")
  })

  it("five failures for one login lock it with 429 and Retry-After, even for the right password", async () => {
    const m = await onboard(server)
    for (let i = 0; i < 5; i++) {
      const res = await cabinet(server, "/login", { method: "POST", body: { login: m.login, password: `wrong password ${i}`, code: "000000" } })
      expect(res.status).toBe(401)
    }
    const locked = await cabinet(server, "/login", { method: "POST", body: { login: m.login, password: m.password, code: await m.app.code() } })
    expect([locked.status, codeOf(locked)]).toEqual([429, "MERCHANT_RATE_LIMITED"])
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect(Number(locked.headers.get("retry-after"))).toBeLessThanOrEqual(900)
    // another login is not locked
    const other = await onboard(server)
    const fine = await cabinet(server, "/login", { method: "POST", body: { login: other.login, password: other.password, code: await other.app.code() } })
    expect(fine.status, fine.text).toBe(204)
  })

  it("an inactive merchant signs in and manages its key in the cabinet, but its wallet requests through the session get 403", async () => {
    const m = await onboard(server)
    await setMerchantStatus(server, m.merchant.id, "inactive")
    const wallet = await merchantApi(server, "/deposits/wallets", { method: "POST", cookie: m.cookie, body: { network: "tron" } })
    expect([wallet.status, codeOf(wallet)]).toEqual([403, "MERCHANT_NOT_ACTIVE"])
    expect(await sessionWalletsOf(server, { cookie: m.cookie })).toEqual([])
    const key = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: await m.app.code() } })
    expect(key.status, key.text).toBe(201)
    expect((await profileOf(server, { cookie: m.cookie })).status).toBe("inactive")
  })

  it("a blocked merchant gets 403 MERCHANT_BLOCKED, and blocking ends its sessions", async () => {
    const m = await onboard(server)
    expect((await cabinet(server, "/me", { cookie: m.cookie })).status).toBe(200)
    await setMerchantStatus(server, m.merchant.id, "blocked")
    const me = await cabinet(server, "/me", { cookie: m.cookie })
    expect([me.status, codeOf(me)]).toEqual([401, "CABINET_SESSION_REQUIRED"])
    const login = await cabinet(server, "/login", { method: "POST", body: { login: m.login, password: m.password, code: await m.app.code() } })
    expect([login.status, codeOf(login)]).toEqual([403, "MERCHANT_BLOCKED"])
  })
})
