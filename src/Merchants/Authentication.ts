/**
 * The authentication middleware of every `/api/v1/merchant` route (spec 5, CONTRACT 2 and 6):
 * Bearer key, merchant status, per-merchant rate limit with its headers on every authenticated
 * response, and a per-address budget for failed authentications.
 */
import { HttpApiMiddleware, HttpApiSecurity, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { Settings } from "../Config.js"
import { ApiKeyMissing, MerchantBlocked, MerchantNotActive, RateLimited, Wire } from "../Domain/Errors.js"
import type { AuthenticatedMerchant } from "../Domain/Merchant.js"
import { bearerToken } from "./Keys.js"
import { Merchants } from "./Merchants.js"
import { makeTokenBuckets } from "./RateLimiter.js"

export class CurrentMerchant extends Context.Tag("CurrentMerchant")<CurrentMerchant, AuthenticatedMerchant>() {}

/** One message for every authentication failure, so the bodies are byte-identical. */
const KEY_MISSING_MESSAGE = "A valid API key is required: send Authorization: Bearer <API_KEY>."

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  provides: CurrentMerchant,
  failure: Schema.Union(Wire.ApiKeyMissing, Wire.MerchantBlocked, Wire.MerchantNotActive, Wire.RateLimited),
  security: { bearer: HttpApiSecurity.bearer }
}) {}

type AuthError = ApiKeyMissing | MerchantBlocked | MerchantNotActive | RateLimited

/** Requests that create purchases or change wallets: refused for an inactive merchant (CONTRACT 2). */
const isMutation = (method: string) => method === "POST"

const rateLimitHeaders = (limit: number, remaining: number) => ({
  "x-ratelimit-limit": String(limit),
  "x-ratelimit-remaining": String(remaining)
})

/** What authentication costs in rate-limit terms, outside the HttpApi middleware (raw routes). */
export class Authenticator extends Effect.Service<Authenticator>()("Authenticator", {
  effect: Effect.gen(function*() {
    const merchants = yield* Merchants
    const settings = yield* Settings
    const perMerchant = makeTokenBuckets(settings.rateLimitRps, settings.rateLimitBurst)
    const failedPerAddress = makeTokenBuckets(settings.authFailureRps, settings.authFailureBurst)

    /**
     * Authenticates a request from its Authorization header. On success and on a 429 for a known
     * merchant, `headers` are the rate-limit headers to add to the response.
     */
    const authenticate = (
      authorization: string | undefined,
      method: string,
      address: string
    ): Effect.Effect<
      { readonly merchant: AuthenticatedMerchant; readonly headers: Record<string, string> },
      { readonly error: AuthError; readonly headers: Record<string, string> }
    > =>
      Effect.gen(function*() {
        const key = bearerToken(authorization)
        // An address that keeps presenting bad keys gets no more lookups for a while. A key known
        // valid a moment ago (the cache) still passes: one client's bad keys must not lock out the
        // others behind the same address (a gateway).
        const budget = yield* failedPerAddress.peek(address)
        const known = budget.allowed || key === "" ? undefined : merchants.authenticateCached(key, Date.now())
        if (!budget.allowed && known === undefined) {
          return yield* Effect.fail({
            error: new RateLimited({ message: "Too many failed authentications from this address." }),
            headers: { ...rateLimitHeaders(budget.limit, 0), "retry-after": String(budget.retryAfterSeconds) }
          })
        }
        const found = known !== undefined ? Option.some(known) : key === "" ? Option.none() : yield* merchants.authenticate(key)
        if (Option.isNone(found)) {
          yield* failedPerAddress.take(address)
          return yield* Effect.fail({ error: new ApiKeyMissing({ message: KEY_MISSING_MESSAGE }), headers: { "www-authenticate": "Bearer" } })
        }
        const merchant = found.value
        const decision = yield* perMerchant.take(merchant.id)
        const headers = rateLimitHeaders(decision.limit, decision.remaining)
        if (merchant.status === "blocked") {
          return yield* Effect.fail({ error: new MerchantBlocked({ message: "This merchant account is blocked." }), headers })
        }
        if (!decision.allowed) {
          return yield* Effect.fail({
            error: new RateLimited({ message: `Rate limit exceeded; retry after ${decision.retryAfterSeconds} s.` }),
            headers: { ...headers, "retry-after": String(decision.retryAfterSeconds) }
          })
        }
        if (merchant.status === "inactive" && isMutation(method)) {
          return yield* Effect.fail({
            error: new MerchantNotActive({ message: "This merchant is not active: purchases and wallet changes are refused." }),
            headers
          })
        }
        return { merchant, headers }
      })

    /**
     * The success path of `authenticate` alone, synchronously, for the fast lane: a cached key of
     * a merchant that is not blocked, with a token left (a cached key passes whatever the address's
     * failure budget, as in `authenticate`).
     * Anything else is `undefined` and takes nothing, so the request goes to `authenticate`, which
     * answers it exactly as always.
     */
    const authenticateCached = (authorization: string | undefined, now: number) => {
      const key = bearerToken(authorization)
      const merchant = key === "" ? undefined : merchants.authenticateCached(key, now)
      if (merchant === undefined || merchant.status === "blocked") return undefined
      const decision = perMerchant.takeAt(merchant.id, now)
      if (!decision.allowed) return undefined
      return { merchant, headers: rateLimitHeaders(decision.limit, decision.remaining) }
    }

    /**
     * Undoes `authenticateCached`'s token for a request the fast lane passes on after all: the
     * HttpApi path takes its own, and one request costs one token.
     */
    const giveBackCached = (merchantId: string) => perMerchant.giveBack(merchantId)

    return { authenticate, authenticateCached, giveBackCached } as const
  }),
  dependencies: [Merchants.Default]
}) {}

const clientAddress = (request: HttpServerRequest.HttpServerRequest) => Option.getOrElse(request.remoteAddress, () => "unknown")

const addHeaders = (headers: Record<string, string>) =>
  Object.keys(headers).length === 0
    ? Effect.void
    : HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    return {
      bearer: () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          return yield* authenticator.authenticate(request.headers["authorization"], request.method, clientAddress(request)).pipe(
            Effect.tap(({ headers }) => addHeaders(headers)),
            Effect.map(({ merchant }) => merchant),
            Effect.catchAll(({ error, headers }) => Effect.zipRight(addHeaders(headers), Effect.fail(error)))
          )
        })
    }
  })
)
