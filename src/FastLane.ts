/**
 * The fast lane of the hottest read routes (GET /balance, /items, /items/search): their success
 * path answered straight on node's request event, without a fiber, a Context, middleware
 * FiberRefs or schema encoding per request (the HttpApi path costs 5-7x the CPU of a bare
 * node:http server per request; bench/RESULTS.md has the ladder).
 *
 * It only takes what it can answer with a 200: a GET of a known route whose query decodes, with a
 * cached key of a merchant that is not blocked and a token left. Everything else, including every
 * error, goes to the HttpApi server untouched, which stays the one place that answers errors and
 * the contract that OpenAPI documents. The rate-limit headers, X-Request-Id and the request
 * metrics are the same on both paths.
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { AuthenticatedMerchant } from "./Domain/Merchant.js"
import { Authenticator } from "./Merchants/Authentication.js"
import { Metrics } from "./Ops/Metrics.js"

/** Query parameters as HttpApi sees them: a repeated name is an array. */
export type Query = Record<string, string | Array<string>>

/** Bytes lent by a pool: `release` gives them back once the socket has them (never, if it failed). */
export interface LentBytes {
  readonly bytes: Buffer
  readonly release: () => void
}

/** The 200 body of a request (JSON); a promised undefined leaves it to the HttpApi path after all. */
export type FastBody = string | LentBytes | Promise<string | undefined>

type Responder = (merchant: AuthenticatedMerchant) => FastBody

const PREPARED_KEPT = 10_000

export interface FastRoute {
  /** The request's whole path, e.g. `/api/v1/merchant/balance`. */
  readonly path: string
  /**
   * Decodes the query (no side effects): its answer for the merchant, or undefined to leave the
   * request to HttpApi, which answers the error. An answer is kept for later requests of the same
   * URL, so it must read live state when it is called, not when it is prepared.
   */
  readonly prepare: (query: Query) => Responder | undefined
}

const INCOMING_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The request id of a response: the caller's own if it is reasonable, otherwise a new one. */
export const requestIdOf = (incoming: string | undefined): string =>
  incoming !== undefined && INCOMING_REQUEST_ID.test(incoming) ? incoming : randomUUID()

const queryOf = (search: string): Query => {
  const query: Query = {}
  for (const [name, value] of new URLSearchParams(search)) {
    const seen = query[name]
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return query
}

/** Passes the request on to the HttpApi server. */
export type Fallback = () => void

export const makeFastLane = (routes: ReadonlyArray<FastRoute>) =>
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    const metrics = yield* Metrics
    const byPath = new Map(routes.map((route) => [route.path, route]))
    const answered = metrics.counter({
      name: "http_fast_lane_responses_total",
      help: "Responses of the hot read routes answered by the fast lane (the rest of their requests go through HttpApi)",
      labelNames: ["route"]
    })

    const answeredByRoute = new Map(routes.map((route) => [route.path, answered.labels({ route: route.path })]))
    const answeredOn = (path: string) => answeredByRoute.get(path)!
    const failures = metrics.counter({
      name: "http_fast_lane_failures_total",
      help: "Fast-lane answers that failed unexpectedly and were passed on to HttpApi"
    })

    const send = (
      request: IncomingMessage,
      response: ServerResponse,
      path: string,
      started: number,
      headers: Record<string, string>,
      body: string | LentBytes
    ) => {
      const incomingId = request.headers["x-request-id"]
      const bytes = typeof body === "string" ? Buffer.from(body) : body.bytes
      response.writeHead(200, {
        "content-type": "application/json",
        "content-length": bytes.length,
        "x-request-id": requestIdOf(typeof incomingId === "string" ? incomingId : undefined),
        ...headers
      })
      // 'finish': the bytes are handed to the socket, so a lent buffer can be used again
      if (typeof body === "string") response.end(bytes)
      else response.end(bytes, body.release)
      answeredOn(path).inc()
      metrics.recordRequest("api", "GET", path, 200, (performance.now() - started) / 1000)
    }

    /**
     * Decoded queries by their exact URL: decoding is pure, and clients poll the same few URLs, so
     * the parse and the schema decode (a tenth of a list request's CPU) run once per URL. Only
     * queries that decoded are kept, at most PREPARED_KEPT of them (then it starts over).
     */
    const preparedByUrl = new Map<string, Responder>()
    const prepared = (route: FastRoute, url: string, queryAt: number): Responder | undefined => {
      const known = preparedByUrl.get(url)
      if (known !== undefined) return known
      const respond = route.prepare(queryAt < 0 ? {} : queryOf(url.slice(queryAt + 1)))
      if (respond === undefined) return respond
      if (preparedByUrl.size >= PREPARED_KEPT) preparedByUrl.clear()
      preparedByUrl.set(url, respond)
      return respond
    }

    /**
     * Answers the request and returns true, or returns false having changed nothing. An answer
     * that turns out asynchronously not to be one (a failed query) is passed on with `fallback`.
     */
    const handle = (request: IncomingMessage, response: ServerResponse, fallback: Fallback): boolean => {
      // Code here runs outside any fiber: a throw would reach node's parser and end the process,
      // so an unexpected failure passes the request on to HttpApi, which answers and logs it.
      try {
        return answer(request, response, fallback)
      } catch {
        failures.inc()
        return response.headersSent
      }
    }

    const answer = (request: IncomingMessage, response: ServerResponse, fallback: Fallback): boolean => {
      if (request.method !== "GET" || request.url === undefined) return false
      const started = performance.now()
      const queryAt = request.url.indexOf("?")
      const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt)
      const route = byPath.get(path)
      if (route === undefined) return false
      const respond = prepared(route, request.url, queryAt)
      if (respond === undefined) return false
      const authenticated = authenticator.authenticateCached(
        request.headers.authorization,
        request.socket.remoteAddress ?? "unknown",
        Date.now()
      )
      if (authenticated === undefined) return false
      const body = respond(authenticated.merchant)
      if (!(body instanceof Promise)) {
        send(request, response, path, started, authenticated.headers, body)
        return true
      }
      body.then((text) => text === undefined ? fallback() : send(request, response, path, started, authenticated.headers, text))
        // the HttpApi path runs the same read again and answers (and logs) whatever it meets
        .catch(() => {
          failures.inc()
          if (!response.headersSent) fallback()
        })
      return true
    }

    return { handle } as const
  })

export type FastLane = Effect.Effect.Success<ReturnType<typeof makeFastLane>>
