/**
 * The fast lane of the hottest routes (GET /balance, /items, /items/search, POST /buy): answered
 * straight on node's request event, without a fiber, a Context, middleware FiberRefs or schema
 * encoding per request (the HttpApi path costs 5-7x the CPU of a bare node:http server per
 * request; bench/RESULTS-archive.md has the ladder).
 *
 * Its routes are named by their endpoint in the contract (`fastGet`), which gives their path and
 * query schema. It takes a GET of such a route whose query decodes, or a POST with a JSON body of
 * known length, whose key the one authentication (Merchants/Authentication.ts `start`) decides
 * from memory: a refusal is answered here with the middleware's bytes, a success by the route.
 * Everything else (a key to look up, a query or body that does not decode, a read that fails)
 * goes to the HttpApi server, which answers it; a POST whose body was read is passed on with the
 * same bytes. Both paths write through one response writer (Responses.ts): the same X-Request-Id,
 * rate-limit headers and request metrics.
 */
import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Effect, Either } from "effect"
import { IncomingMessage, type ServerResponse } from "node:http"
import type { MerchantApi } from "./Api.js"
import { errorWire } from "./Domain/Errors.js"
import type { AuthenticatedMerchant } from "./Domain/Merchant.js"
import { PUBLIC_ROUTES, type Route } from "./HttpErrors.js"
import { Authenticator, type AuthOutcome } from "./Merchants/Authentication.js"
import { Metrics } from "./Ops/Metrics.js"
import { shareBodyProblem } from "./RequestBody.js"
import { type BodyBytes, type Responses } from "./Responses.js"

type RefusedAuth = Extract<AuthOutcome, { readonly _tag: "Refused" }>

/** Query parameters as HttpApi sees them: a repeated name is an array. */
export type Query = Record<string, string | Array<string>>

/** The 200 body of a request (JSON); a promised undefined leaves it to the HttpApi path after all. */
export type FastBody = string | BodyBytes | Promise<string | undefined>

type Responder = (merchant: AuthenticatedMerchant) => FastBody

const PREPARED_KEPT = 10_000
/** Larger bodies (and bodies of unknown length) go to HttpApi unread. */
const POST_BODY_MAX_BYTES = 16 * 1024

// ---- routes named by their endpoint in the contract ----------------------------------------------

type ApiGroups = typeof MerchantApi extends HttpApi.HttpApi<infer _Id, infer Groups, infer _E, infer _R> ? Groups : never
type GroupName = HttpApiGroup.HttpApiGroup.Name<ApiGroups>
type EndpointOf<G extends GroupName> = HttpApiGroup.HttpApiGroup.Endpoints<HttpApiGroup.HttpApiGroup.WithName<ApiGroups, G>>
type EndpointName<G extends GroupName> = HttpApiEndpoint.HttpApiEndpoint.Name<EndpointOf<G>>
type UrlParamsOf<G extends GroupName, E extends EndpointName<G>> = HttpApiEndpoint.HttpApiEndpoint.UrlParams<
  HttpApiEndpoint.HttpApiEndpoint.WithName<EndpointOf<G>, E>
>

/** A GET route of the contract answered in the fast lane. */
export interface FastRoute {
  readonly group: string
  readonly endpoint: string
  /**
   * Answers the decoded query (no side effects): its answer for the merchant, or undefined to
   * leave the request to HttpApi, which answers it. An answer is kept for later requests of the
   * same URL, so it must read live state when it is called, not when it is prepared.
   */
  readonly prepare: (urlParams: never) => Responder | undefined
}

/**
 * A fast GET route named by its group and endpoint in Api.ts: its path and the schema of its
 * query come from the contract, so the fast lane serves exactly the URLs and queries HttpApi does.
 */
export const fastGet = <G extends GroupName, E extends EndpointName<G>>(
  group: G,
  endpoint: E,
  prepare: (urlParams: UrlParamsOf<G, E>) => Responder | undefined
): FastRoute => ({ group, endpoint, prepare })

/** The contract's endpoint of a fast route. */
const endpointOf = (group: string, name: string): Route => {
  const found = PUBLIC_ROUTES.find((route) => route.group === group && route.endpoint === name)
  if (found === undefined) throw new Error(`no endpoint ${group}.${name} in the contract`)
  return found
}

/** The fast lane's reading of a route: a path and a query decoder from the contract. */
const resolveGet = (route: FastRoute) => {
  const endpoint = endpointOf(route.group, route.endpoint)
  if (endpoint.method !== "GET") throw new Error(`${route.group}.${route.endpoint} is not a GET`)
  const prepare = route.prepare as (urlParams: unknown) => Responder | undefined
  return {
    path: endpoint.path,
    prepare: (query: Query) => Either.match(endpoint.decodeQuery(query), { onLeft: () => undefined, onRight: prepare })
  }
}

/** A success of a POST route: its status and JSON body. */
export interface FastAnswer {
  readonly status: number
  readonly body: string
}

export interface FastPostRoute {
  readonly group: string
  readonly endpoint: string
  /**
   * The answer to the parsed JSON body (`text`: as sent), or undefined (having changed nothing) to
   * leave the request to HttpApi, which reads the same body and answers whatever it meets.
   */
  readonly answer: (body: unknown, merchant: AuthenticatedMerchant, text: string) => Promise<FastAnswer | undefined>
}

const queryOf = (search: string): Query => {
  const query: Query = {}
  for (const [name, value] of new URLSearchParams(search)) {
    const seen = query[name]
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return query
}

/** Passes the request on to the HttpApi server: the original, or a replay of it whose body was read. */
export type Fallback = (request?: IncomingMessage) => void

/** A copy of a request whose body was read, that gives the same bytes again. */
const replayOf = (request: IncomingMessage, body: Buffer): IncomingMessage => {
  const replay = new IncomingMessage(request.socket)
  replay.method = request.method
  replay.url = request.url
  replay.headers = request.headers
  replay.rawHeaders = request.rawHeaders
  replay.httpVersion = request.httpVersion
  replay.httpVersionMajor = request.httpVersionMajor
  replay.httpVersionMinor = request.httpVersionMinor
  replay.complete = true
  shareBodyProblem(request, replay)
  replay.push(body)
  replay.push(null)
  return replay
}

export const makeFastLane = (responses: Responses, routes: ReadonlyArray<FastRoute>, postRoutes: ReadonlyArray<FastPostRoute> = []) =>
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    const metrics = yield* Metrics
    const byPath = new Map(routes.map(resolveGet).map((route) => [route.path, route]))
    const postByPath = new Map(postRoutes.map((route) => [endpointOf(route.group, route.endpoint).path, route]))
    const answered = metrics.counter({
      name: "http_fast_lane_responses_total",
      help: "Responses of the hot routes answered by the fast lane (the rest of their requests go through HttpApi)",
      labelNames: ["route"]
    })

    // plain numbers, added to the counter at each scrape (prom-client's inc hashed the labels: 0.5 µs)
    const answeredByRoute = new Map([...byPath.keys(), ...postByPath.keys()].map((path) => [path, { count: 0, reported: 0 }]))
    yield* metrics.onScrape(Effect.sync(() => {
      for (const [route, counted] of answeredByRoute) {
        answered.inc({ route }, counted.count - counted.reported)
        counted.reported = counted.count
      }
    }))
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
      body: string | BodyBytes,
      status = 200
    ) => {
      responses.writeJson(request, response, path, started, status, headers, body)
      answeredByRoute.get(path)!.count++
    }

    /**
     * Decoded queries by their exact URL: decoding is pure, and clients poll the same few URLs, so
     * the parse and the schema decode (a tenth of a list request's CPU) run once per URL. Only
     * queries that decoded are kept, at most PREPARED_KEPT of them (then it starts over).
     */
    const preparedByUrl = new Map<string, Responder>()
    const prepared = (route: ReturnType<typeof resolveGet>, url: string, queryAt: number): Responder | undefined => {
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

    /** The one authentication (Merchants/Authentication.ts), as far as memory answers it. */
    const authenticate = (request: IncomingMessage, method: string) =>
      authenticator.start(request.headers.authorization, method, request.socket.remoteAddress ?? "unknown", Date.now(), request.socket)

    /** A refused authentication, answered as the middleware answers it: the spec's error and its headers. */
    const refuse = (request: IncomingMessage, response: ServerResponse, path: string, started: number, refused: RefusedAuth) => {
      const { body, status } = errorWire(refused.error)
      send(request, response, path, started, refused.headers, body, status)
    }

    /** Passes a request on to HttpApi after all, giving back the token its fast-lane answer took. */
    const passOn = (merchantId: string, fallback: () => void) => () => {
      authenticator.giveBack(merchantId)
      fallback()
    }

    /**
     * Sends an answer that comes asynchronously with `sendIt`; one that turns out not to be one
     * (undefined, or a failure, which is counted) is passed on with `back`.
     */
    const settle = <A>(answer: Promise<A | undefined>, response: ServerResponse, sendIt: (a: A) => void, back: () => void) => {
      answer.then((a) => a === undefined ? back() : sendIt(a)).catch(() => {
        failures.inc()
        if (!response.headersSent) back()
      })
    }

    const answer = (request: IncomingMessage, response: ServerResponse, fallback: Fallback): boolean => {
      if (request.method === "POST" && request.url !== undefined) return answerPost(request, response, fallback)
      if (request.method !== "GET" || request.url === undefined) return false
      const started = performance.now()
      const queryAt = request.url.indexOf("?")
      const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt)
      const route = byPath.get(path)
      if (route === undefined) return false
      const respond = prepared(route, request.url, queryAt)
      if (respond === undefined) return false
      const authenticated = authenticate(request, "GET")
      if (authenticated._tag === "Lookup") return false
      if (authenticated._tag === "Refused") {
        refuse(request, response, path, started, authenticated)
        return true
      }
      const body = respond(authenticated.merchant)
      if (!(body instanceof Promise)) {
        send(request, response, path, started, authenticated.headers, body)
        return true
      }
      // the HttpApi path runs the same read again and answers (and logs) whatever it meets
      settle(body, response, (text) => send(request, response, path, started, authenticated.headers, text), passOn(authenticated.merchant.id, () => fallback()))
      return true
    }

    const answerPost = (request: IncomingMessage, response: ServerResponse, fallback: Fallback): boolean => {
      const route = postByPath.get(request.url!)
      const length = Number(request.headers["content-length"])
      if (
        route === undefined || !(length > 0 && length <= POST_BODY_MAX_BYTES) ||
        !request.headers["content-type"]?.startsWith("application/json")
      ) return false
      const started = performance.now()
      const authenticated = authenticate(request, "POST")
      if (authenticated._tag === "Lookup") return false
      if (authenticated._tag === "Refused") {
        refuse(request, response, request.url!, started, authenticated)
        return true
      }
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      // a request that breaks off while its body is read has nobody left to answer
      request.on("error", () => undefined)
      request.on("end", () => {
        const bytes = Buffer.concat(chunks)
        const back = passOn(authenticated.merchant.id, () => fallback(replayOf(request, bytes)))
        const text = bytes.toString("utf8")
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          return back()
        }
        settle(
          route.answer(body, authenticated.merchant, text),
          response,
          (answered) => send(request, response, request.url!, started, authenticated.headers, answered.body, answered.status),
          back
        )
      })
      return true
    }

    return { handle } as const
  })

export type FastLane = Effect.Effect.Success<ReturnType<typeof makeFastLane>>
