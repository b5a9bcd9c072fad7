/**
 * The merchant cabinet from a client's side: its JSON endpoints with Origin and the session
 * cookie, an authenticator app that never gives one code twice, and onboarding by invite.
 */
import { Schema } from "effect"
import * as OTPAuth from "otpauth"
import { Profile } from "../../src/Cabinet/Api.js"
import { DepositWalletList } from "../../src/Deposits/Api.js"
import { bodyOf } from "./expectations.js"
import type { RunningServer } from "./server.js"

export interface CabinetResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: unknown
  /** The `mer_session=...` pair of a Set-Cookie, if one came. */
  readonly cookie: string | undefined
}

export interface CabinetInit {
  readonly method?: string
  readonly body?: unknown
  /** `Cookie: mer_session=...` */
  readonly cookie?: string | undefined
  /** The Origin header: the server's own by default, null for none. */
  readonly origin?: string | null
  readonly key?: string
}

export const request = async (url: string, server: RunningServer, init: CabinetInit = {}): Promise<CabinetResponse> => {
  const headers: Record<string, string> = {}
  const origin = init.origin === undefined ? server.baseUrl : init.origin
  if (origin !== null) headers["origin"] = origin
  if (init.cookie !== undefined) headers["cookie"] = init.cookie
  if (init.key !== undefined) headers["authorization"] = `Bearer ${init.key}`
  if (init.body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(url, {
    method: init.method ?? "GET",
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
  })
  const text = await response.text()
  let json: unknown
  try {
    json = text === "" ? undefined : JSON.parse(text)
  } catch {
    json = undefined
  }
  const setCookie = response.headers.getSetCookie().find((c) => c.startsWith("mer_session="))
  return { status: response.status, headers: response.headers, text, json, cookie: setCookie?.split(";")[0] }
}

/** POST /cabinet/api/invite/start's answer (CONTRACT 7; src/Cabinet/Api.ts keeps its schema to itself). */
export const InviteStarted = Schema.Struct({ merchant_name: Schema.String, totp_secret: Schema.String, otpauth_uri: Schema.String })

/** A request to /cabinet/api{path}. */
export const cabinet = (server: RunningServer, path: string, init: CabinetInit = {}) => request(`${server.baseUrl}/cabinet/api${path}`, server, init)

/** A request to the merchant API (/api/v1/merchant{path}) with the cabinet's cookie and Origin rules. */
export const merchantApi = (server: RunningServer, path: string, init: CabinetInit = {}) => request(`${server.baseUrl}/api/v1/merchant${path}`, server, init)

const PERIOD_MS = 30_000
/** How long a code given out stays acceptable at least (a request's time, on a loaded machine). */
const MARGIN_MS = 10_000

/** An authenticator app that gives each time step's code once, waiting for the clock when it must. */
export class AuthenticatorApp {
  private readonly totp: OTPAuth.TOTP
  private lastStep = -1
  constructor(readonly secret: string) {
    this.totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 })
  }
  /**
   * A code the server has not seen, of the earliest step the server still accepts for at least
   * 10 s more (it takes the step before its clock's, its clock's and the next): several codes in a
   * row seldom wait for the clock, and a request never crosses out of its code's window.
   */
  async code(): Promise<string> {
    for (;;) {
      const now = Date.now()
      const current = Math.floor(now / PERIOD_MS)
      // step s is accepted until the clock reaches step s + 2
      const earliest = Math.ceil((now + MARGIN_MS) / PERIOD_MS) - 2
      const step = Math.max(this.lastStep + 1, earliest)
      if (step <= current + 1) {
        this.lastStep = step
        return this.totp.generate({ timestamp: step * PERIOD_MS })
      }
      await new Promise((resolve) => setTimeout(resolve, (step - 1) * PERIOD_MS - now + 50))
    }
  }
  /** The code last given (for replays). */
  last(): string {
    return this.totp.generate({ timestamp: this.lastStep * PERIOD_MS })
  }
  /** Six digits that are no code of the window around now. */
  wrong(): string {
    return this.wrongCodes(1)[0]!
  }
  /**
   * `count` different six-digit guesses, none a code of the two steps before now to the two after:
   * wrong for the server's window (the step before its clock's to the next) for at least 30 s,
   * whenever a step changes.
   */
  wrongCodes(count: number): Array<string> {
    const now = Date.now()
    const valid = new Set([-2, -1, 0, 1, 2].map((k) => this.totp.generate({ timestamp: now + k * PERIOD_MS })))
    const codes: Array<string> = []
    for (let n = 0; codes.length < count; n++) {
      const candidate = String(n).padStart(6, "0")
      if (!valid.has(candidate)) codes.push(candidate)
    }
    return codes
  }
  /** A code of a step two behind the clock: outside the server's window. */
  stale(): string {
    return this.totp.generate({ timestamp: Date.now() - 2 * PERIOD_MS })
  }
}

export interface Onboarded {
  readonly merchant: { id: string; apiKey: string; webhookSecret: string }
  readonly login: string
  readonly password: string
  readonly app: AuthenticatorApp
  readonly cookie: string
}

/** An invite's token, from the admin API's invite_url (`.../cabinet/invite#<token>`). */
export const invite = async (server: RunningServer, merchantId: string): Promise<string> => {
  const issued = await server.adminApi.call((client) => client.merchants.inviteMerchant({ path: { id: merchantId } }))
  return issued.invite_url.split("#")[1]!
}

/** A merchant through onboarding: invite, start, complete; signed in (with `origin` as the Origin, the server's own by default). */
export const onboard = async (
  server: RunningServer,
  login = `ops-${Math.random().toString(36).slice(2, 10)}@merchant.example`,
  origin?: string
): Promise<Onboarded> => {
  const merchant = await server.createMerchant()
  const token = await invite(server, merchant.id)
  const started = await cabinet(server, "/invite/start", { method: "POST", body: { token }, origin })
  if (started.status !== 200) throw new Error(`invite start: ${started.status} ${started.text}`)
  const app = new AuthenticatorApp(bodyOf(started, InviteStarted).totp_secret)
  const password = "correct horse battery staple"
  const done = await cabinet(server, "/invite/complete", { method: "POST", body: { token, login, password, code: await app.code() }, origin })
  if (done.status !== 201 || done.cookie === undefined) throw new Error(`invite complete: ${done.status} ${done.text}`)
  return { merchant, login, password, app, cookie: done.cookie }
}

/** POST /cabinet/api/login (with the server's own Origin unless `init` says otherwise). */
export const signIn = (server: RunningServer, body: { readonly login: string; readonly password: string; readonly code: string }, init: CabinetInit = {}) =>
  cabinet(server, "/login", { ...init, method: "POST", body })

/** How many answers had each status. */
export const statusCounts = (responses: ReadonlyArray<{ readonly status: number }>): Record<number, number> => {
  const counts: Record<number, number> = {}
  for (const { status } of responses) counts[status] = (counts[status] ?? 0) + 1
  return counts
}

/** The whole seconds of a 429's Retry-After (NaN when it has none). */
export const retryAfterOf = (response: CabinetResponse): number => Number(response.headers.get("retry-after") ?? Number.NaN)

/**
 * Repeats `attempt` while it is refused with 429, each time after the Retry-After it was given
 * (a lockout's window passing), up to `deadlineMs`: the first answer that is not a 429.
 */
export const afterLockout = async (attempt: () => Promise<CabinetResponse>, deadlineMs = 120_000): Promise<CabinetResponse> => {
  const deadline = Date.now() + deadlineMs
  for (;;) {
    const response = await attempt()
    if (response.status !== 429 || Date.now() > deadline) return response
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, retryAfterOf(response)) * 1000))
  }
}

/** GET /cabinet/api/me, which must answer 200: the decoded Profile. */
export const profileOf = async (server: RunningServer, init: CabinetInit) => bodyOf(await cabinet(server, "/me", init), Profile)

/** The wallets of GET /api/v1/merchant/deposits/wallets through the session, which must answer 200. */
export const sessionWalletsOf = async (server: RunningServer, init: CabinetInit) =>
  bodyOf(await merchantApi(server, "/deposits/wallets", init), DepositWalletList).wallets

/** The API key still works (a 200 through the typed client). */
export const keyWorks = (server: RunningServer, apiKey: string) => server.merchant(apiKey).call((client) => client.balance.getBalance())
