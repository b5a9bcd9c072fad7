/**
 * The cabinet from an attacker's side (its brakes on guessing), over real sockets: sign-ins for one
 * login sent at once (to one process, and to two on one PostgreSQL), step-up codes guessed one by
 * one and all at once, a flood of sign-ins with random logins, replayed TOTP codes, a cookie after
 * logout, and a cross-origin change with a valid cookie. Nothing here depends on timing: where a
 * test waits for a lockout's window to pass, the window is 20 s (long beside the few requests each
 * test sends into it) and the test asks again after the Retry-After it was given; elsewhere it is
 * the default 15 minutes.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { Profile } from "../../src/Cabinet/Api.js"
import { ApiKeyIssued } from "../../src/Ops/AdminApi.js"
import { afterLockout, cabinet, type CabinetResponse, onboard, type Onboarded, retryAfterOf, signIn, statusCounts } from "../support/cabinet.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { bodyOf, codeOf } from "../support/expectations.js"
import { metricValue, type RunningServer, startServer } from "../support/server.js"

vi.setConfig({ testTimeout: 180_000 })

const WINDOW_SECONDS = 20
/**
 * The lockout window short enough to wait out; every sign-in finds a hashing place (the queue is
 * long) and the address's budget is out of the way, so that the login's own window is what
 * refuses; the API's rate limit barely refills, so that what takes from it shows.
 */
const ENV = {
  CABINET_LOCKOUT_WINDOW_MINUTES: String(WINDOW_SECONDS / 60),
  CABINET_PASSWORD_HASH_QUEUE: "200",
  CABINET_SIGNIN_ADDRESS_FAILURES: "100000",
  RATE_LIMIT_RPS: "0.01",
  RATE_LIMIT_BURST: "1000"
}

const hashes = (server: RunningServer) => metricValue(server, "cabinet_password_hashes_total")

/** A refusal by a brake: 429 MERCHANT_RATE_LIMITED with a Retry-After within the window (`windowSeconds`). */
const expectLimited = (response: CabinetResponse, windowSeconds = WINDOW_SECONDS) => {
  expect([response.status, codeOf(response)], response.text).toEqual([429, "MERCHANT_RATE_LIMITED"])
  expect(retryAfterOf(response)).toBeGreaterThanOrEqual(1)
  expect(retryAfterOf(response)).toBeLessThanOrEqual(windowSeconds)
}

/** `count` sign-ins for `m`'s login with its right password and wrong codes (a leaked password), sent together, spread over `servers`. */
const guessesAtOnce = (servers: ReadonlyArray<RunningServer>, m: Onboarded, count: number) =>
  Promise.all(m.app.wrongCodes(count).map((code, i) => signIn(servers[i % servers.length]!, { login: m.login, password: m.password, code })))

/** Expects at most 5 of `answers` judged (401) and the rest refused unchecked (429); the number judged. */
const expectAtMostFiveJudged = (answers: ReadonlyArray<CabinetResponse>) => {
  const judged = answers.filter((res) => res.status === 401)
  expect(judged.length).toBeLessThanOrEqual(5)
  for (const res of judged) expect(codeOf(res)).toBe("CABINET_LOGIN_FAILED")
  for (const res of answers.filter((res) => res.status !== 401)) expectLimited(res)
  expect(answers.every((res) => res.cookie === undefined)).toBe(true)
  return judged.length
}

/** Signs `m` in with its password and a fresh code once its login's window lets it: the answer. */
const signInAfterLockout = (server: RunningServer, m: Onboarded) =>
  afterLockout(async () => signIn(server, { login: m.login, password: m.password, code: await m.app.code() }))

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: ENV })
})
afterAll(async () => {
  await server?.stop()
})

describe("sign-ins sent at once", () => {
  it("50 for one login: at most 5 are judged (401, one password hash each), the rest get 429 with Retry-After; after the window, the right password and code sign in", async () => {
    const m = await onboard(server)
    const before = await hashes(server)
    const answers = await guessesAtOnce([server], m, 50)
    const judged = expectAtMostFiveJudged(answers)
    // a refused attempt started no hash
    expect(await hashes(server) - before).toBe(judged)
    const after = await signInAfterLockout(server, m)
    expect(after.status, after.text).toBe(204)
    expect((await cabinet(server, "/me", { cookie: after.cookie })).status).toBe(200)
  })

  describe.runIf(!!process.env["DATABASE_URL"])("on two processes sharing one PostgreSQL (DATABASE_URL only)", () => {
    let database: FreshDatabase
    let a: RunningServer
    let b: RunningServer
    beforeAll(async () => {
      database = await freshDatabase()
      a = await startServer({ database, env: ENV })
      b = await startServer({ database, env: ENV })
    })
    afterAll(async () => {
      await a?.stop()
      await b?.stop()
      await database?.drop()
    })

    it("50 for one login, half to each process: at most 5 judged in all, the rest 429; after the window, the other process signs in", async () => {
      const m = await onboard(a)
      const before = await hashes(a) + await hashes(b)
      const answers = await guessesAtOnce([a, b], m, 50)
      const judged = expectAtMostFiveJudged(answers)
      expect(await hashes(a) + await hashes(b) - before).toBe(judged)
      const after = await signInAfterLockout(b, m)
      expect(after.status, after.text).toBe(204)
    })
  })
})

describe("guessing the step-up code of the key and secret endpoints", () => {
  /** X-RateLimit-Remaining of a read with the merchant's API key, which must answer 200. */
  const remainingOf = async (apiKey: string) => {
    const read = await server.api("/balance", { key: apiKey })
    expect(read.status, read.text).toBe(200)
    return Number(read.headers.get("x-ratelimit-remaining"))
  }

  it("5 wrong codes lock the merchant's step-up (429 with Retry-After, even for a right code) without touching its API rate limit; a right code after the window works", async () => {
    const m = await onboard(server)
    const remaining = await remainingOf(m.merchant.apiKey)
    const [first, ...rest] = m.app.wrongCodes(7)
    for (const [i, code] of [first!, ...rest.slice(0, 4)].entries()) {
      const res = await cabinet(server, i % 2 === 0 ? "/api-key" : "/webhook-secret", { method: "POST", cookie: m.cookie, body: { code } })
      expect([res.status, codeOf(res)], res.text).toEqual([400, "CABINET_CODE_INVALID"])
    }
    expectLimited(await cabinet(server, "/webhook-secret", { method: "POST", cookie: m.cookie, body: { code: rest[4]! } }))
    expectLimited(await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: await m.app.code() } }))
    // the API key still works, and the guesses took nothing from its rate limit (the read itself takes one)
    expect(await remainingOf(m.merchant.apiKey)).toBeGreaterThanOrEqual(remaining - 1)
    // sign-in is another lock: the code refused above was never used, and signs in
    const login = await signIn(server, { login: m.login, password: m.password, code: m.app.last() })
    expect(login.status, login.text).toBe(204)

    const issued = await afterLockout(async () => cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: await m.app.code() } }))
    expect(issued.status, issued.text).toBe(201)
    const { api_key } = bodyOf(issued, ApiKeyIssued)
    expect((await server.api("/balance", { key: api_key })).status).toBe(200)
  })

  it("20 wrong codes sent at once: at most 5 are judged (400), the rest get 429; a right code after the window works", async () => {
    const m = await onboard(server)
    const answers = await Promise.all(
      m.app.wrongCodes(20).map((code, i) => cabinet(server, i % 2 === 0 ? "/api-key" : "/webhook-secret", { method: "POST", cookie: m.cookie, body: { code } }))
    )
    const judged = answers.filter((res) => res.status === 400)
    expect(judged.length).toBeLessThanOrEqual(5)
    for (const res of judged) expect(codeOf(res)).toBe("CABINET_CODE_INVALID")
    for (const res of answers.filter((res) => res.status !== 400)) expectLimited(res)
    const secret = await afterLockout(async () => cabinet(server, "/webhook-secret", { method: "POST", cookie: m.cookie, body: { code: await m.app.code() } }))
    expect(secret.status, secret.text).toBe(201)
  })
})

describe("with the default window and hashing capacity", () => {
  // the default lockout window (15 minutes) and hashing capacity (2 at once, 4 waiting), with the
  // address's budget out of the way: a flood from many addresses, where only the hashing bound holds
  let steady: RunningServer
  beforeAll(async () => {
    steady = await startServer({ env: { CABINET_SIGNIN_ADDRESS_FAILURES: "100000", RATE_LIMIT_RPS: "1000", RATE_LIMIT_BURST: "100000" } })
  })
  afterAll(async () => {
    await steady?.stop()
  })

  it("a success gives back only its own place: the failures sent beside it still count", async () => {
    const m = await onboard(steady)
    for (const code of m.app.wrongCodes(4)) {
      expect((await signIn(steady, { login: m.login, password: m.password, code })).status).toBe(401)
    }
    const ok = await signIn(steady, { login: m.login, password: m.password, code: await m.app.code() })
    expect(ok.status, ok.text).toBe(204)
    // four failures are still in the window: one more fills it
    expect((await signIn(steady, { login: m.login, password: "not the password", code: m.app.wrong() })).status).toBe(401)
    expectLimited(await signIn(steady, { login: m.login, password: m.password, code: await m.app.code() }), 15 * 60)
  })

  it("a flood of sign-ins with random logins answers 401 or 429 (Retry-After, no hash started), never 5xx, while API reads go on; a merchant signs in after it", async () => {
    const m = await onboard(steady)
    const before = await hashes(steady)
    let flooding = true
    const reads: Array<number> = []
    const reader = (async () => {
      while (flooding) reads.push((await steady.api("/items?limit=5", { key: m.merchant.apiKey })).status)
    })()
    const answers: Array<CabinetResponse> = []
    // waves of 50 at once, at least 4, until some were refused for the hashing capacity
    for (let wave = 0; wave < 4 || (wave < 20 && !answers.some((res) => res.status === 429)); wave++) {
      answers.push(
        ...await Promise.all(
          Array.from(
            { length: 50 },
            (_, i) =>
              signIn(steady, { login: `flood-${wave}-${i}-${Math.random().toString(36).slice(2)}@x.example`, password: "a guessed password", code: "123456" })
          )
        )
      )
    }
    flooding = false
    await reader
    const counts = statusCounts(answers)
    expect(Object.keys(counts).filter((status) => status !== "401" && status !== "429"), JSON.stringify(counts)).toEqual([])
    expect(counts[429] ?? 0).toBeGreaterThan(0)
    for (const res of answers.filter((res) => res.status === 429)) {
      expectLimited(res)
      expect(res.text).toContain("at once")
    }
    // only the judged ones hashed: an unknown login costs one hash, a refusal none
    expect(await hashes(steady) - before).toBe(counts[401] ?? 0)
    expect(reads.length).toBeGreaterThan(0)
    expect(statusCounts(reads.map((status) => ({ status })))).toEqual({ 200: reads.length })
    const ok = await signIn(steady, { login: m.login, password: m.password, code: await m.app.code() })
    expect(ok.status, ok.text).toBe(204)
  })
})

describe("sessions and codes an attacker got hold of", () => {
  it("a TOTP code used to sign in is refused on the key endpoint, and one used there is refused at sign-in", async () => {
    const m = await onboard(server)
    const code = await m.app.code()
    expect((await signIn(server, { login: m.login, password: m.password, code })).status).toBe(204)
    const replayedOnKey = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code } })
    expect([replayedOnKey.status, codeOf(replayedOnKey)]).toEqual([400, "CABINET_CODE_INVALID"])
    const next = await m.app.code()
    const issued = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: next } })
    expect(issued.status, issued.text).toBe(201)
    const replayedAtSignIn = await signIn(server, { login: m.login, password: m.password, code: next })
    expect([replayedAtSignIn.status, codeOf(replayedAtSignIn)]).toEqual([401, "CABINET_LOGIN_FAILED"])
    const replayedOnSecret = await cabinet(server, "/webhook-secret", { method: "POST", cookie: m.cookie, body: { code: next } })
    expect([replayedOnSecret.status, codeOf(replayedOnSecret)]).toEqual([400, "CABINET_CODE_INVALID"])
  })

  it("a cookie after logout is no session: 401 CABINET_SESSION_REQUIRED, for reads and changes", async () => {
    const m = await onboard(server)
    const out = await cabinet(server, "/logout", { method: "POST", cookie: m.cookie })
    expect(out.status).toBe(204)
    const me = await cabinet(server, "/me", { cookie: m.cookie })
    expect([me.status, codeOf(me)]).toEqual([401, "CABINET_SESSION_REQUIRED"])
    const key = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code: await m.app.code() } })
    expect([key.status, codeOf(key)]).toEqual([401, "CABINET_SESSION_REQUIRED"])
    expect((await server.api("/balance", { key: m.merchant.apiKey })).status).toBe(200)
  })

  it("a cross-origin POST with a valid cookie and code gets 403 MERCHANT_ORIGIN_NOT_ALLOWED and changes nothing", async () => {
    const m = await onboard(server)
    const code = await m.app.code()
    const evil = "https://evil.example"
    for (const path of ["/api-key", "/webhook-secret"]) {
      const res = await cabinet(server, path, { method: "POST", origin: evil, cookie: m.cookie, body: { code } })
      expect([res.status, codeOf(res)], path).toEqual([403, "MERCHANT_ORIGIN_NOT_ALLOWED"])
    }
    const webhook = await cabinet(server, "/webhook", { method: "PUT", origin: evil, cookie: m.cookie, body: { url: "https://evil.example/h" } })
    expect([webhook.status, codeOf(webhook)]).toEqual([403, "MERCHANT_ORIGIN_NOT_ALLOWED"])
    // the key, the webhook URL and the code are as they were
    expect((await server.api("/balance", { key: m.merchant.apiKey })).status).toBe(200)
    const profile = bodyOf(await cabinet(server, "/me", { cookie: m.cookie }), Profile)
    expect([profile.api_key_last4, profile.webhook_url]).toEqual([m.merchant.apiKey.slice(-4), null])
    const issued = await cabinet(server, "/api-key", { method: "POST", cookie: m.cookie, body: { code } })
    expect(issued.status, issued.text).toBe(201)
  })
})
