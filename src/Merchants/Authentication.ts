/**
 * The authentication middleware of every `/api/v1/merchant` route (spec 5, CONTRACT 2 and 6):
 * Bearer key, merchant status, per-merchant rate limit with its headers on every authenticated
 * response, and a per-address budget for failed authentications.
 */
import { HttpApiMiddleware, HttpApiSecurity, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
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

/** What authenticating a request came to, with the headers its response carries either way. */
export type AuthOutcome =
  | { readonly _tag: "Authenticated"; readonly merchant: AuthenticatedMerchant; readonly headers: Record<string, string> }
  | { readonly _tag: "Refused"; readonly error: AuthError; readonly headers: Record<string, string> }

const refused = (error: AuthError, headers: Record<string, string>): AuthOutcome => ({ _tag: "Refused", error, headers })

/**
 * The one authentication of the merchant API, for the HttpApi middleware, the fast lane and the
 * feed's upgrade alike. `start` runs synchronously on what is in memory and either decides or asks
 * for the key to be looked up; `authenticate` is the whole of it as an Effect (the lookup included).
 */
export class Authenticator extends Effect.Service<Authenticator>()("Authenticator", {
  effect: Effect.gen(function*() {
    const merchants = yield* Merchants
    const settings = yield* Settings
    const perMerchant = makeTokenBuckets(settings.rateLimitRps, settings.rateLimitBurst)
    const failedPerAddress = makeTokenBuckets(settings.authFailureRps, settings.authFailureBurst)

    /** The outcome once the key's merchant is known (undefined: no merchant has it). Takes the tokens it spends. */
    const decide = (merchant: AuthenticatedMerchant | undefined, method: string, address: string, now: number): AuthOutcome => {
      if (merchant === undefined) {
        failedPerAddress.takeAt(address, now)
        return refused(new ApiKeyMissing({ message: KEY_MISSING_MESSAGE }), { "www-authenticate": "Bearer" })
      }
      const decision = perMerchant.takeAt(merchant.id, now)
      const headers = rateLimitHeaders(decision.limit, decision.remaining)
      if (merchant.status === "blocked") return refused(new MerchantBlocked({ message: "This merchant account is blocked." }), headers)
      if (!decision.allowed) {
        return refused(new RateLimited({ message: `Rate limit exceeded; retry after ${decision.retryAfterSeconds} s.` }), {
          ...headers,
          "retry-after": String(decision.retryAfterSeconds)
        })
      }
      if (merchant.status === "inactive" && isMutation(method)) {
        return refused(new MerchantNotActive({ message: "This merchant is not active: purchases and wallet changes are refused." }), headers)
      }
      return { _tag: "Authenticated", merchant, headers }
    }

    /**
     * Authentication as far as memory answers it: an outcome, or the key to look up in the
     * database (a well-formed key not in the cache, from an address with failures to spare). A
     * key known valid a moment ago (the cache) passes whatever the address's failure budget: one
     * client's bad keys must not lock out the others behind the same address (a gateway).
     */
    const start = (
      authorization: string | undefined,
      method: string,
      address: string,
      now: number
    ): AuthOutcome | { readonly _tag: "Lookup"; readonly key: string } => {
      const key = bearerToken(authorization)
      const cached = key === "" ? undefined : merchants.authenticateCached(key, now)
      if (cached !== undefined) return decide(cached, method, address, now)
      const budget = failedPerAddress.peekAt(address, now)
      if (!budget.allowed) {
        return refused(new RateLimited({ message: "Too many failed authentications from this address." }), {
          ...rateLimitHeaders(budget.limit, 0),
          "retry-after": String(budget.retryAfterSeconds)
        })
      }
      return key === "" ? decide(undefined, method, address, now) : { _tag: "Lookup", key }
    }

    /** Authenticates a request from its Authorization header: `start`, then the lookup it asks for. */
    const authenticate = (authorization: string | undefined, method: string, address: string): Effect.Effect<AuthOutcome> =>
      Effect.gen(function*() {
        const started = start(authorization, method, address, yield* Clock.currentTimeMillis)
        if (started._tag !== "Lookup") return started
        const found = yield* merchants.authenticate(started.key)
        return decide(Option.getOrUndefined(found), method, address, yield* Clock.currentTimeMillis)
      })

    /**
     * Gives back the token an authenticated request took, for a request the fast lane passes on
     * to HttpApi after all: that path authenticates again, and one request costs one token.
     */
    const giveBack = (merchantId: string) => perMerchant.giveBack(merchantId)

    return { authenticate, start, giveBack } as const
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
          const outcome = yield* authenticator.authenticate(request.headers["authorization"], request.method, clientAddress(request))
          yield* addHeaders(outcome.headers)
          return outcome._tag === "Authenticated" ? outcome.merchant : yield* Effect.fail(outcome.error)
        })
    }
  })
)
