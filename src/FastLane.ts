/**
 * The fast handler of the hottest routes (GET /balance, /items, /items/search, POST /buy),
 * declared by their features (FastRoutes.ts): answered straight on node's request, without a
 * fiber, a Context, middleware FiberRefs or schema encoding per request (the HttpApi path costs
 * 5-7x the CPU of a bare node:http server per request).
 *
 * It decides before anything happens: a request whose path, method, query, Content-Type or length
 * it does not take, or whose key memory cannot decide (one to look up), is declined untouched, and
 * the Effect app answers it. Only then does the one authentication (Merchants/Authentication.ts
 * `start`) take its rate-limit token, and from there every outcome is answered here, with the
 * bytes the HttpApi path gives: a refusal, a body that is not JSON or fails the schema, the
 * route's own errors, and an unexpected failure (500, logged as the HttpApi path logs a defect).
 * Both paths write through one response writer (Responses.ts): the same X-Request-Id, rate-limit
 * headers and request metrics.
 */
import { Cause, Effect, Either, ParseResult, Runtime } from "effect"
import type { IncomingMessage } from "node:http"
import { logFault } from "./Db/ConnectionLoss.js"
import { errorWire } from "./Domain/Errors.js"
import type { FastGet, FastPost, Query, Responder } from "./FastRoutes.js"
import { bodyProblemAnswer, decodeFailure, errorAnswer, INTERNAL_ERROR, malformedBody, NOT_JSON, type WireAnswer } from "./HttpErrors.js"
import { Authenticator, type AuthOutcome } from "./Merchants/Authentication.js"
import type { SlottedResponse } from "./OpenResponses.js"
import { Metrics } from "./Ops/Metrics.js"
import { bodyProblemOf, type GuardedRequest } from "./RequestBody.js"
import { type BodyBytes, requestIdOf, type Responses } from "./Responses.js"

type Authenticated = Extract<AuthOutcome, { readonly _tag: "Authenticated" }>
type Response = SlottedResponse<GuardedRequest>

const PREPARED_KEPT = 10_000
/** Larger bodies (and bodies of unknown length) go to HttpApi unread. */
const POST_BODY_MAX_BYTES = 16 * 1024

const queryOf = (search: string): Query => {
  const query: Query = {}
  for (const [name, value] of new URLSearchParams(search)) {
    const seen = query[name]
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return query
}

/** The Cause of a failure as the route gave it: an Effect's (run to a promise) or a thrown error's. */
const causeOf = (error: unknown): Cause.Cause<unknown> => Runtime.isFiberFailure(error) ? error[Runtime.FiberFailureCauseId] : Cause.die(error)

export const makeFastLane = (responses: Responses, gets: ReadonlyArray<FastGet>, posts: ReadonlyArray<FastPost>) =>
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    const metrics = yield* Metrics
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const byPath = new Map(gets.map((route) => [route.route.path, route]))
    const postByPath = new Map(posts.map((route) => [route.route.path, route]))
    const answered = metrics.counter({
      name: "http_fast_lane_responses_total",
      help: "Responses of the hot routes answered by the fast handler (the rest of their requests go through HttpApi)",
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
      help: "Fast-handler answers that failed unexpectedly (answered 500 and logged)"
    })

    const send = (
      request: IncomingMessage,
      response: Response,
      path: string,
      started: number,
      headers: Record<string, string>,
      body: string | BodyBytes,
      status = 200,
      contentType = "application/json"
    ) => {
      responses.writeJson(request, response, path, started, status, headers, body, contentType)
      answeredByRoute.get(path)!.count++
    }
    const sendAnswer = (request: IncomingMessage, response: Response, path: string, started: number, headers: Record<string, string>, answer: WireAnswer) =>
      send(request, response, path, started, headers, answer.body, answer.status, answer.contentType)

    /**
     * An unexpected failure once the request is this handler's: 500 in the spec's shape, logged as
     * the HttpApi path logs a defect (a lost database connection as a warning), with the answer's
     * request id. An answer already begun (or that cannot be written) can only be cut. Never throws.
     */
    const fail = (request: IncomingMessage, response: Response, path: string, started: number, headers: Record<string, string>, error: unknown) => {
      failures.inc()
      const incomingId = request.headers["x-request-id"]
      const requestId = requestIdOf(typeof incomingId === "string" ? incomingId : undefined)
      runFork(logFault("unhandled defect", causeOf(error)).pipe(Effect.annotateLogs({ request_id: requestId, route: path })))
      try {
        if (!response.headersSent) return sendAnswer(request, response, path, started, { ...headers, "x-request-id": requestId }, INTERNAL_ERROR)
      } catch {
        // nothing more can be told: the connection goes
      }
      response.destroy()
    }

    /** Sends what `answer` comes to, or the failure it meets. */
    const settle = <A>(
      answer: Promise<A>,
      sendIt: (a: A) => void,
      failed: (error: unknown) => void
    ) => {
      answer.then((a) => {
        try {
          sendIt(a)
        } catch (error) {
          failed(error)
        }
      }, failed)
    }

    /**
     * Decoded queries by their exact URL: decoding is pure, and clients poll the same few URLs, so
     * the parse and the schema decode (a tenth of a list request's CPU) run once per URL. Only
     * queries that decoded are kept, at most PREPARED_KEPT of them (then it starts over).
     */
    const preparedByUrl = new Map<string, Responder>()
    const prepared = (route: FastGet, url: string, queryAt: number): Responder | undefined => {
      const known = preparedByUrl.get(url)
      if (known !== undefined) return known
      const respond = route.prepare(queryAt < 0 ? {} : queryOf(url.slice(queryAt + 1)))
      if (respond === undefined) return respond
      if (preparedByUrl.size >= PREPARED_KEPT) preparedByUrl.clear()
      preparedByUrl.set(url, respond)
      return respond
    }

    /** The one authentication (Merchants/Authentication.ts), as far as memory answers it: a token is taken unless it is a Lookup. */
    const authenticate = (request: IncomingMessage, method: string) =>
      authenticator.start(request.headers.authorization, method, request.socket.remoteAddress ?? "unknown", Date.now(), request.socket)

    /** A refused authentication, answered as the middleware answers it: the spec's error and its headers. */
    const refuse = (request: IncomingMessage, response: Response, path: string, started: number, refused: Exclude<AuthOutcome, Authenticated>) => {
      const { body, status } = errorWire(refused.error)
      send(request, response, path, started, refused.headers, body, status)
    }

    const answerGet = (request: GuardedRequest, response: Response, url: string): boolean => {
      const queryAt = url.indexOf("?")
      const path = queryAt < 0 ? url : url.slice(0, queryAt)
      const route = byPath.get(path)
      if (route === undefined) return false
      const started = performance.now()
      const respond = prepared(route, url, queryAt)
      if (respond === undefined) return false
      const authenticated = authenticate(request, "GET")
      if (authenticated._tag === "Lookup") return false
      // the request is this handler's from here on: every outcome is answered here
      try {
        if (authenticated._tag === "Refused") refuse(request, response, path, started, authenticated)
        else respondGet(request, response, path, started, authenticated, respond)
      } catch (error) {
        fail(request, response, path, started, authenticated.headers, error)
      }
      return true
    }

    const respondGet = (request: GuardedRequest, response: Response, path: string, started: number, authenticated: Authenticated, respond: Responder) => {
      const { headers } = authenticated
      const body = respond(authenticated.merchant)
      if (!(body instanceof Promise)) return send(request, response, path, started, headers, body)
      settle(
        body,
        (text) => send(request, response, path, started, headers, text),
        (error) => fail(request, response, path, started, headers, error)
      )
    }

    const answerPost = (request: GuardedRequest, response: Response, url: string): boolean => {
      const route = postByPath.get(url)
      const length = Number(request.headers["content-length"])
      if (
        route === undefined || !(length > 0 && length <= POST_BODY_MAX_BYTES) ||
        !request.headers["content-type"]?.startsWith("application/json")
      ) return false
      const started = performance.now()
      const authenticated = authenticate(request, "POST")
      if (authenticated._tag === "Lookup") return false
      // the request is this handler's from here on: every outcome is answered here
      if (authenticated._tag === "Refused") {
        try {
          refuse(request, response, url, started, authenticated)
        } catch (error) {
          fail(request, response, url, started, authenticated.headers, error)
        }
        return true
      }
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      // a request that breaks off while its body is read has nobody left to answer
      request.on("error", () => undefined)
      request.on("end", () => {
        try {
          answerBody(request, response, route, started, authenticated, Buffer.concat(chunks))
        } catch (error) {
          fail(request, response, url, started, authenticated.headers, error)
        }
      })
      return true
    }

    /** A POST's whole body, answered as the HttpApi path answers it (HttpErrors.ts SpecErrors, then the route). */
    const answerBody = (request: GuardedRequest, response: Response, route: FastPost, started: number, authenticated: Authenticated, bytes: Buffer) => {
      const { path } = route.route
      const { headers } = authenticated
      const reply = (answer: WireAnswer) => sendAnswer(request, response, path, started, headers, answer)
      const problem = bodyProblemOf(request)
      if (problem !== undefined) return reply(bodyProblemAnswer(route.route, problem))
      const text = bytes.toString("utf8")
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        return reply(malformedBody(NOT_JSON))
      }
      const answer = route.answer(body, authenticated.merchant, text)
      if (Either.isLeft(answer)) {
        const issues = ParseResult.ArrayFormatter.formatErrorSync(answer.left)
        const message = issues.length === 0 ? ParseResult.TreeFormatter.formatErrorSync(answer.left) : ""
        return reply(errorAnswer(decodeFailure("POST", route.route, issues, message)))
      }
      settle(answer.right, reply, (error) => fail(request, response, path, started, headers, error))
    }

    /**
     * Answers the request and returns true, or returns false having done nothing (no token taken,
     * nothing read). Code here runs outside any fiber: a throw would reach node's parser and end
     * the process, so one before the request is this handler's declines it (counted).
     */
    const handle = (request: GuardedRequest, response: Response): boolean => {
      const url = request.url
      if (url === undefined) return false
      try {
        if (request.method === "GET") return answerGet(request, response, url)
        if (request.method === "POST") return answerPost(request, response, url)
        return false
      } catch {
        failures.inc()
        return response.headersSent
      }
    }

    return { handle } as const
  })

export type FastLane = Effect.Effect.Success<ReturnType<typeof makeFastLane>>
