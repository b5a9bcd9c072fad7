/**
 * The cabinet's limits as settings (CONTRACT 7), on a server with strict ones: a session idle longer
 * than SESSION_IDLE_MINUTES ends, one in use lives until SESSION_MAX_HOURS, and an address's failed
 * sign-ins past CABINET_SIGNIN_ADDRESS_FAILURES are refused whatever login they try.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { cabinet, onboard } from "../support/cabinet.js"
import { codeOf } from "../support/expectations.js"
import { type RunningServer, startServer } from "../support/server.js"

// a code is accepted once per merchant: a test that needs a third code waits for the clock (up to 30 s)
vi.setConfig({ testTimeout: 120_000 })

/** SESSION_IDLE_MINUTES of the strict server below (0.1), in milliseconds. */
const IDLE_MS = 6_000

describe("settings: the per-address budget, session lifetimes", () => {
  // idle 0.1 min (6 s), lifetime 0.003 h (10.8 s), three failed sign-ins per address
  let strict: RunningServer
  beforeAll(async () => {
    strict = await startServer({ env: { SESSION_IDLE_MINUTES: "0.1", SESSION_MAX_HOURS: "0.003", CABINET_SIGNIN_ADDRESS_FAILURES: "3" } })
  })
  afterAll(async () => {
    await strict?.stop()
  })

  it("a session idle longer than SESSION_IDLE_MINUTES ends; one in use lives until SESSION_MAX_HOURS", async () => {
    const m = await onboard(strict)
    const born = Date.now()
    const idle = await cabinet(strict, "/login", { method: "POST", body: { login: m.login, password: m.password, code: await m.app.code() } })
    expect(idle.status).toBe(204)
    // the onboarding session is used every second: it outlives the idle limit. Its only excuse to
    // end early is a machine so busy that the server saw no use of it for longer than the limit
    // (from the previous request's sending to this answer's arrival bounds what the server saw).
    let previousSent = Date.now()
    while (Date.now() - born < 8_000) {
      const sent = Date.now()
      const status = (await cabinet(strict, "/me", { cookie: m.cookie })).status
      if (status !== 200) expect(Date.now() - previousSent, `session in use ended with ${status}`).toBeGreaterThan(IDLE_MS)
      previousSent = sent
      await new Promise((resolve) => setTimeout(resolve, 1_000))
    }
    // unused since its sign-in, which is longer ago than the limit
    expect(Date.now() - born).toBeGreaterThan(IDLE_MS)
    expect(codeOf(await cabinet(strict, "/me", { cookie: idle.cookie }))).toBe("CABINET_SESSION_REQUIRED")
    // and still ends at its lifetime, however busy
    let last = 200
    while (Date.now() - born < 13_000 && last === 200) {
      last = (await cabinet(strict, "/me", { cookie: m.cookie })).status
      await new Promise((resolve) => setTimeout(resolve, 1_000))
    }
    expect(codeOf(await cabinet(strict, "/me", { cookie: m.cookie }))).toBe("CABINET_SESSION_REQUIRED")
  })

  // last: it spends this address's budget
  it("an address's sign-ins have a budget of failures (CABINET_SIGNIN_ADDRESS_FAILURES): past it, 429 with Retry-After whatever login it tries", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await cabinet(strict, "/login", { method: "POST", body: { login: `nobody${i}@x.example`, password: "wrong password!", code: "123456" } })
      expect(res.status).toBe(401)
    }
    const refused = await cabinet(strict, "/login", { method: "POST", body: { login: "someone@x.example", password: "wrong password!", code: "123456" } })
    expect([refused.status, codeOf(refused)]).toEqual([429, "MERCHANT_RATE_LIMITED"])
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
  })
})
