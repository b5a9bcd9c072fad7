/**
 * The cabinet's handlers (CONTRACT 7): invite, sign-in and sign-out set or clear the `mer_session`
 * cookie; the session endpoints reuse the merchant API's own handlers for balance, purchases and
 * the webhook log (the session's merchant is the CurrentMerchant they read).
 */
import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option, Schema } from "effect"
import { MerchantApi } from "../Api.js"
import { Settings } from "../Config.js"
import { unstorablePath } from "../Domain/Db.js"
import { CabinetWebhookUrlInvalid, InvalidQuery, RateLimited } from "../Domain/Errors.js"
import { WEBHOOK_URL_MAX, WebhookUrl } from "../Domain/HttpUrl.js"
import { Ledger } from "../Ledger/Ledger.js"
import { CurrentMerchant, SESSION_COOKIE } from "../Merchants/Api.js"
import { addHeaders, Authenticator, clientAddress } from "../Merchants/Authentication.js"
import { getBalance } from "../Merchants/Http.js"
import { Merchants } from "../Merchants/Merchants.js"
import { listPurchases } from "../Purchases/Http.js"
import { Purchases } from "../Purchases/Purchases.js"
import { WebhookEvents } from "../Webhooks/Events.js"
import { listWebhookEvents } from "../Webhooks/Http.js"
import { CabinetAccounts, type Profile } from "./Accounts.js"
import { CabinetOrigin } from "./Api.js"
import type { AttemptLimited } from "./Brakes.js"

/**
 * `Set-Cookie` of the session: exactly CONTRACT 7's attributes (a browser session cookie; the
 * server ends it), or, to clear it, an empty one that expires at once.
 */
const sessionCookie = (id: string | undefined, secure: boolean) =>
  `${SESSION_COOKIE}=${id ?? ""}; HttpOnly; SameSite=Strict; Path=/${id === undefined ? "; Max-Age=0" : ""}${secure ? "; Secure" : ""}`

const setCookie = (cookie: string) =>
  HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, "set-cookie", cookie)))

const profileView = (p: Profile) => ({
  merchant_id: p.id,
  name: p.name,
  login: p.login,
  status: p.status,
  webhook_url: p.webhookUrl,
  api_key_last4: p.keyLast4,
  api_key_created_at: p.keyCreatedAt === null ? null : p.keyCreatedAt.toISOString()
})

/** A string the database can keep as it is (no NUL, no lone surrogate). */
const storable = (value: string) => unstorablePath(value) === undefined

/** A webhook URL as the admin API takes it, that the database can keep. */
const isWebhookUrl = (url: string) => Schema.is(WebhookUrl)(url) && storable(url)

/** An attempt a brake refused: 429 MERCHANT_RATE_LIMITED with its Retry-After. */
const tooMany = (limited: AttemptLimited) =>
  Effect.zipRight(addHeaders({ "retry-after": String(limited.retryAfter) }), Effect.fail(new RateLimited({ message: limited.message })))

export const CabinetOriginLive = Layer.effect(
  CabinetOrigin,
  Effect.map(Authenticator, (authenticator) => Effect.flatMap(HttpServerRequest.HttpServerRequest, authenticator.originAllowed))
)

export const CabinetSignInHttp = HttpApiBuilder.group(MerchantApi, "cabinetSignIn", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* CabinetAccounts
    const secure = (yield* Settings).publicUrl.startsWith("https:")
    return handlers
      .handle("startInvite", ({ payload }) =>
        Effect.map(accounts.startInvite(payload.token), (started) => ({
          merchant_name: started.merchantName,
          totp_secret: started.totpSecret,
          otpauth_uri: started.otpauthUri
        })))
      .handle("completeInvite", ({ payload }) =>
        Effect.gen(function*() {
          if (!storable(payload.login)) return yield* Effect.fail(new InvalidQuery({ message: "login: must be an email address" }))
          const done = yield* accounts.completeInvite(payload)
          yield* setCookie(sessionCookie(done.session, secure))
          return { merchant_id: done.merchantId, login: done.login }
        }))
      .handle("login", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const session = yield* accounts.signIn(payload, clientAddress(request)).pipe(Effect.catchTag("AttemptLimited", tooMany))
          yield* setCookie(sessionCookie(session, secure))
        }))
      .handle("logout", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const id = request.cookies[SESSION_COOKIE]
          if (id !== undefined && id !== "") yield* accounts.endSession(id)
          yield* setCookie(sessionCookie(undefined, secure))
        }))
  }))

export const CabinetHttp = HttpApiBuilder.group(MerchantApi, "cabinet", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* CabinetAccounts
    const authenticator = yield* Authenticator
    const merchants = yield* Merchants
    const ledger = yield* Ledger
    const purchases = yield* Purchases
    const events = yield* WebhookEvents
    const me = Effect.flatMap(CurrentMerchant, (merchant) => Effect.map(accounts.profile(merchant.id), profileView))
    /**
     * The fresh code of a key or secret change, under the step-up's own limit: the request's token
     * of the merchant's API rate limit is given back, so guessing codes leaves the API alone.
     */
    const stepUp = (merchantId: string, code: string) =>
      Effect.zipRight(
        Effect.sync(() => authenticator.giveBack(merchantId)),
        accounts.requireFreshCode(merchantId, code).pipe(Effect.catchTag("AttemptLimited", tooMany))
      )
    return handlers
      .handle("me", () => me)
      .handle("balance", () => getBalance(ledger))
      .handle("purchases", listPurchases(purchases))
      .handle("webhookEvents", listWebhookEvents(events))
      .handle("newApiKey", ({ payload }) =>
        Effect.gen(function*() {
          const merchant = yield* CurrentMerchant
          yield* stepUp(merchant.id, payload.code)
          const key = yield* merchants.rotateApiKey(merchant.id)
          return { api_key: Option.getOrThrow(key) }
        }))
      .handle("setWebhook", ({ payload }) =>
        Effect.gen(function*() {
          const merchant = yield* CurrentMerchant
          if (payload.url !== null && !isWebhookUrl(payload.url)) {
            return yield* Effect.fail(
              new CabinetWebhookUrlInvalid({
                message: `url: must be an http(s) URL without user info (user:password@), of at most ${WEBHOOK_URL_MAX} characters, or null`
              })
            )
          }
          yield* merchants.update(merchant.id, { webhookUrl: payload.url })
          return yield* me
        }))
      .handle("newWebhookSecret", ({ payload }) =>
        Effect.gen(function*() {
          const merchant = yield* CurrentMerchant
          yield* stepUp(merchant.id, payload.code)
          const secret = yield* merchants.rotateWebhookSecret(merchant.id, payload.previous_valid_seconds ?? 0)
          return { webhook_secret: Option.getOrThrow(secret) }
        }))
  }))
