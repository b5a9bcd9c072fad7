/**
 * What every response of a listener carries and how it is counted, whichever path answers it: the
 * HttpApi path (a pre-response handler) and the fast lane (node's response, written directly).
 * X-Request-Id, the request metrics by route template and status, and a body for a bare 500.
 */
import { HttpApp, HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { internalError } from "./HttpErrors.js"
import type { Metrics } from "./Ops/Metrics.js"

const INCOMING_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The request id of a response: the caller's own if it is reasonable, otherwise a new one. */
export const requestIdOf = (incoming: string | undefined): string => incoming !== undefined && INCOMING_REQUEST_ID.test(incoming) ? incoming : randomUUID()

const UUID_SEGMENT = /\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?=\/|$)/gi

/**
 * A route label of bounded cardinality: the route template a path matches (ids folded to `:id`,
 * compared without case and repeated slashes, as the routers match), or `unmatched`; so no request,
 * however many paths it makes up, adds a series.
 */
const makeRouteLabeler = (templates: ReadonlyArray<string>) => {
  const normal = (path: string) => path.replace(/\/{2,}/g, "/").toLowerCase()
  const known = new Map(templates.map((t) => {
    const folded = t.replace(/:[A-Za-z]+/g, ":id")
    return [normal(folded), folded] as const
  }))
  return (url: string) => known.get(normal(url.split("?")[0]!.replace(UUID_SEGMENT, "/:id"))) ?? "unmatched"
}

/**
 * A body's bytes; `release`, if the bytes are lent by a pool, gives them back once the socket has
 * them (never, if it failed). Kept bytes (a cached page) have none: a callback on `end` costs a
 * 'finish' listener per response.
 */
export interface BodyBytes {
  readonly bytes: Buffer
  readonly release?: (() => void) | undefined
}

/** HSTS for a cabinet served over https: a year, so a browser never again tries it over plain http. */
export const STRICT_TRANSPORT_SECURITY = "max-age=31536000"

export interface ResponseOptions {
  /** Paths whose responses carry Strict-Transport-Security (the cabinet's, when PUBLIC_URL is https). */
  readonly strictTransportPrefixes?: ReadonlyArray<string> | undefined
}

export const makeResponses = (server: string, metrics: Metrics, routes: ReadonlyArray<string>, options: ResponseOptions = {}) => {
  const routeLabel = makeRouteLabeler(routes)
  const strictTransportPrefixes = options.strictTransportPrefixes ?? []
  const strictTransport = (url: string) =>
    strictTransportPrefixes.some((prefix) => url === prefix || url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}?`))

  const record = (method: string, route: string, status: number, started: number) =>
    metrics.recordRequest(server, method, route, status, (performance.now() - started) / 1000)

  /**
   * Every HttpApi response gets its X-Request-Id and is counted. Responses are written by the
   * platform before an outer middleware sees them, so this works through a pre-response handler.
   */
  const middleware = HttpMiddleware.make((app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = performance.now()
      const requestId = requestIdOf(request.headers["x-request-id"])
      yield* HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.sync(() => {
          record(request.method, routeLabel(request.url), response.status, started)
          const answered = response.status === 500 && response.body._tag === "Empty" ? internalError : response
          const identified = HttpServerResponse.setHeader(answered, "x-request-id", requestId)
          return strictTransport(request.url) ? HttpServerResponse.setHeader(identified, "strict-transport-security", STRICT_TRANSPORT_SECURITY) : identified
        })
      )
      return yield* Effect.annotateLogs(app, "request_id", requestId)
    })
  )

  /**
   * A JSON answer written straight on node's response (the fast handler), with the same id and
   * count; `route` is the template the request matched (its label), known to the caller. An
   * `x-request-id` in `headers` is the one the caller has already told (a logged failure's).
   */
  const writeJson = (
    request: IncomingMessage,
    response: ServerResponse,
    route: string,
    started: number,
    status: number,
    headers: Record<string, string>,
    body: string | BodyBytes,
    contentType = "application/json"
  ) => {
    const incomingId = request.headers["x-request-id"]
    const bytes = typeof body === "string" ? Buffer.from(body) : body.bytes
    response.writeHead(status, {
      "content-type": contentType,
      "content-length": bytes.length,
      "x-request-id": requestIdOf(typeof incomingId === "string" ? incomingId : undefined),
      ...headers
    })
    // 'finish': the bytes are handed to the socket, so a lent buffer can be used again
    if (typeof body === "string" || body.release === undefined) response.end(bytes)
    else response.end(bytes, body.release)
    record(request.method ?? "GET", route, status, started)
  }

  return { middleware, writeJson } as const
}

export type Responses = ReturnType<typeof makeResponses>
