/**
 * The authentication of every merchant route (spec 5, CONTRACT 2, 6 and 7): Bearer key or, where
 * the contract allows it, the cabinet's session cookie; merchant status, per-merchant rate limit
 * with its headers on every authenticated response, and a per-address budget for failed
 * authentications. Three middlewares share it: `Authentication` (key only: every route but the
 * deposit endpoints), `KeyOrSession` (the deposit endpoints) and `CabinetSession` (the cabinet's
 * JSON endpoints). The middlewares' tags are the contract's (Api.ts); their implementations are here.
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Layer, Option } from "effect"
import { CabinetAccounts } from "../Cabinet/Accounts.js"
import { Settings } from "../Config.js"
import { ApiKeyMissing, CabinetSessionRequired, MerchantBlocked, MerchantNotActive, OriginNotAllowed, RateLimited } from "../Domain/Errors.js"
import type { AuthenticatedMerchant } from "../Domain/Merchant.js"
import { Authentication, CabinetSession, KeyOrSession, SESSION_COOKIE } from "./Api.js"
import { bearerToken } from "./Keys.js"
import { Merchants } from "./Merchants.js"
import { makeTokenBuckets } from "./RateLimiter.js"

/** One message for every authentication failure, so the bodies are byte-identical. */
const KEY_MISSING_MESSAGE = "A valid API key is required: send Authorization: Bearer <API_KEY>."

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

/** Whether a request's Origin is one the cabinet allows (CABINET_ALLOWED_ORIGINS). */
const makeOriginCheck = (allowed: ReadonlyArray<string>) => {
  const origins = new Set(allowed)
  return (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void, OriginNotAllowed> => {
    const origin = request.headers["origin"]
    return origin !== undefined && origins.has(origin)
      ? Effect.void
      // the allowed origins are not named: a caller from elsewhere learns nothing of the deployment
      : Effect.fail(new OriginNotAllowed({ message: "This request needs an Origin header from an origin this cabinet allows." }))
  }
}

/**
 * The one authentication of the merchant API, for the HttpApi middleware, the fast lane and the
 * feed's upgrade alike. `start` runs synchronously on what is in memory and either decides or asks
 * for the key to be looked up; `authenticate` is the whole of it as an Effect (the lookup included).
 */
export class Authenticator extends Effect.Service<Authenticator>()("Authenticator", {
  effect: Effect.gen(function*() {
    const merchants = yield* Merchants
    const accounts = yield* CabinetAccounts
    const settings = yield* Settings
    const perMerchant = makeTokenBuckets(settings.rateLimitRps, settings.rateLimitBurst)
    const failedPerAddress = makeTokenBuckets(settings.authFailureRps, settings.authFailureBurst)
    /** Fails unless the request's Origin is one the cabinet allows (CONTRACT 7's Origin rule). */
    const originAllowed = makeOriginCheck(settings.cabinetAllowedOrigins)

    /**
     * The outcome once the key's merchant is known (undefined: no merchant has it); `mutation`: a
     * request an inactive merchant may not make (isMutation). Takes the tokens it spends.
     */
    const decide = (merchant: AuthenticatedMerchant | undefined, mutation: boolean, address: string, now: number): AuthOutcome => {
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
      if (merchant.status === "inactive" && mutation) {
        return refused(new MerchantNotActive({ message: "This merchant is not active: purchases and wallet changes are refused." }), headers)
      }
      return { _tag: "Authenticated", merchant, headers }
    }

    /**
     * The key hash of each connection's last request whose key was in the cache: a keep-alive
     * client sends the same Authorization header every time, and reading and hashing it again was
     * about a twentieth of a fast-lane answer's CPU. A header is compared only with the one its own
     * connection sent before, and the entry goes with the connection.
     */
    const keyHashByConnection = new WeakMap<object, { readonly authorization: string; readonly hash: string }>()

    /** The cached merchant of a header its connection sent before, by the hash remembered for it. */
    const repeatedOn = (connection: object | undefined, authorization: string | undefined, now: number) => {
      const remembered = connection === undefined ? undefined : keyHashByConnection.get(connection)
      return remembered !== undefined && remembered.authorization === authorization ? merchants.cachedByKeyHash(remembered.hash, now) : undefined
    }

    /**
     * Authentication as far as memory answers it: an outcome, or the key to look up in the
     * database (a well-formed key not in the cache, from an address with failures to spare). A
     * key known valid a moment ago (the cache) passes whatever the address's failure budget: one
     * client's bad keys must not lock out the others behind the same address (a gateway).
     * `connection` (the request's socket, if any) lets a connection's repeated key skip its hash.
     */
    const start = (
      authorization: string | undefined,
      method: string,
      address: string,
      now: number,
      connection?: object
    ): AuthOutcome | { readonly _tag: "Lookup"; readonly key: string } => {
      const repeated = repeatedOn(connection, authorization, now)
      if (repeated !== undefined) return decide(repeated, isMutation(method), address, now)
      const key = bearerToken(authorization)
      const hash = merchants.keyHashOf(key)
      if (hash !== undefined) {
        const cached = merchants.cachedByKeyHash(hash, now)
        if (cached !== undefined) {
          if (connection !== undefined && authorization !== undefined) keyHashByConnection.set(connection, { authorization, hash })
          return decide(cached, isMutation(method), address, now)
        }
      }
      const budget = failedPerAddress.peekAt(address, now)
      if (!budget.allowed) {
        return refused(new RateLimited({ message: "Too many failed authentications from this address." }), {
          ...rateLimitHeaders(budget.limit, 0),
          "retry-after": String(budget.retryAfterSeconds)
        })
      }
      return key === "" ? decide(undefined, isMutation(method), address, now) : { _tag: "Lookup", key }
    }

    /** Authenticates a request from its Authorization header: `start`, then the lookup it asks for. */
    const authenticate = (authorization: string | undefined, method: string, address: string): Effect.Effect<AuthOutcome> =>
      Effect.gen(function*() {
        const started = start(authorization, method, address, yield* Clock.currentTimeMillis)
        if (started._tag !== "Lookup") return started
        const found = yield* merchants.authenticate(started.key)
        return decide(Option.getOrUndefined(found), isMutation(method), address, yield* Clock.currentTimeMillis)
      })

    /**
     * Authenticates a request by its session cookie: the outcome, or undefined when no live
     * session has that id (each middleware answers that with its own 401).
     */
    const authenticateSession = (sessionId: string, mutation: boolean, address: string): Effect.Effect<AuthOutcome | undefined> =>
      Effect.gen(function*() {
        const found = yield* accounts.session(sessionId)
        return Option.isNone(found) ? undefined : decide(found.value, mutation, address, yield* Clock.currentTimeMillis)
      })

    /**
     * Gives back the token an authenticated request took: the cabinet's step-up has a limit of its
     * own (Cabinet/Http.ts), so guessing codes leaves the merchant's API rate limit alone.
     */
    const giveBack = (merchantId: string) => perMerchant.giveBack(merchantId)

    return { authenticate, authenticateSession, originAllowed, start, giveBack } as const
  }),
  dependencies: [Merchants.Default, CabinetAccounts.Default]
}) {}

export const clientAddress = (request: HttpServerRequest.HttpServerRequest) => Option.getOrElse(request.remoteAddress, () => "unknown")

export const addHeaders = (headers: Record<string, string>) =>
  Object.keys(headers).length === 0
    ? Effect.void
    : HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))

/** Changes something: every method but GET and HEAD (CONTRACT 7's Origin rule). */
const changes = (method: string) => method !== "GET" && method !== "HEAD"

const sessionIdOf = (request: HttpServerRequest.HttpServerRequest) => request.cookies[SESSION_COOKIE] ?? ""

/** The request's merchant by its session, for the two middlewares that accept one; `none` answers a missing or dead session. */
const bySession = <E>(
  authenticator: Authenticator,
  none: () => E,
  /** Whether an inactive merchant's changes are refused (the API's rule), or only blocked merchants (the cabinet's own settings). */
  inactiveRefused: boolean
) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const sessionId = sessionIdOf(request)
    // a cookie on a change needs an allowed Origin, checked before anything else: nothing changes
    if (sessionId !== "" && changes(request.method)) yield* authenticator.originAllowed(request)
    const outcome = yield* authenticator.authenticateSession(sessionId, inactiveRefused && isMutation(request.method), clientAddress(request))
    if (outcome === undefined) return yield* Effect.fail(none())
    yield* addHeaders(outcome.headers)
    return outcome._tag === "Authenticated" ? outcome.merchant : yield* Effect.fail(outcome.error)
  })

const byKey = (authenticator: Authenticator) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const outcome = yield* authenticator.authenticate(request.headers["authorization"], request.method, clientAddress(request))
    yield* addHeaders(outcome.headers)
    return outcome._tag === "Authenticated" ? outcome.merchant : yield* Effect.fail(outcome.error)
  })

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(Authenticator, (authenticator) => ({ bearer: () => byKey(authenticator) }))
)

/**
 * HttpApi tries a middleware's security schemes in turn, the next when one fails; here the first
 * decides alone (key, else session, else the key's 401) and the second repeats its failure, kept
 * by request, so that nothing is checked twice (a failed key takes from the address's budget once).
 */
const decided = new WeakMap<object, AuthError | OriginNotAllowed>()

export const KeyOrSessionLive = Layer.effect(
  KeyOrSession,
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    const decide = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const viaSession = request.headers["authorization"] === undefined && sessionIdOf(request) !== ""
      return yield* (viaSession
        ? bySession(authenticator, () => new ApiKeyMissing({ message: KEY_MISSING_MESSAGE }), true)
        : byKey(authenticator)).pipe(
          Effect.tapError((error) => Effect.sync(() => decided.set(request, error)))
        )
    })
    const repeat = Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request) => Effect.fail(decided.get(request) ?? new ApiKeyMissing({ message: KEY_MISSING_MESSAGE }))
    )
    return { bearer: () => decide, session: () => repeat }
  })
)

export const CabinetSessionLive = Layer.effect(
  CabinetSession,
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    const required = () => new CabinetSessionRequired({ message: "Sign in to the cabinet first: no live session." })
    return {
      session: () =>
        bySession(authenticator, required, false).pipe(
          // a session's merchant is never blocked (blocking ends its sessions), and an inactive one may manage its key and webhooks
          Effect.catchTags({ MerchantBlocked: () => Effect.fail(required()), MerchantNotActive: () => Effect.fail(required()) }),
          Effect.catchTag("ApiKeyMissing", () => Effect.fail(required()))
        )
    }
  })
)
