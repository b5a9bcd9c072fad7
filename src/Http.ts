/**
 * The public server: the merchant HttpApi with its docs and OpenAPI document, the raw routes that
 * stream bytes (added by later features), and the request middleware every response passes
 * through (X-Request-Id, metrics); HttpErrors.ts answers what no handler answered.
 */
import { HttpApiBuilder, HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Deferred, Effect, Layer, Runtime } from "effect"
import { createServer, type IncomingMessage } from "node:http"
import { Server as NetServer } from "node:net"
import { API_PREFIX, MerchantApi } from "./Api.js"
import { ApiShutdown } from "./ApiShutdown.js"
import { CABINET_API_PREFIX } from "./Cabinet/Api.js"
import { CabinetHttp, CabinetOriginLive, CabinetSignInHttp } from "./Cabinet/Http.js"
import { CabinetPageLive } from "./Cabinet/Page.js"
import { CatalogueFastRoutes, CatalogueHttp } from "./Catalogue/Http.js"
import { StreamLive } from "./Catalogue/Stream.js"
import { Settings } from "./Config.js"
import { DepositsHttp } from "./Deposits/Http.js"
import { WalletCallbacksLive } from "./Deposits/WalletCallbacks.js"
import { DocsLive } from "./Docs.js"
import { type FastLane, makeFastLane } from "./FastLane.js"
import { PUBLIC_ROUTES, SpecErrors } from "./HttpErrors.js"
import { AuthenticationLive, CabinetSessionLive, KeyOrSessionLive } from "./Merchants/Authentication.js"
import { BalanceFastRoutes, BalanceHttp } from "./Merchants/Http.js"
import { makeOpenResponses, SlottedResponse } from "./OpenResponses.js"
import { Metrics } from "./Ops/Metrics.js"
import { Readiness } from "./Ops/Readiness.js"
import { PurchasesFastRoutes, PurchasesHttp } from "./Purchases/Http.js"
import { API_BODY_MAX_BYTES, GuardedRequest } from "./RequestBody.js"
import { makeResponses } from "./Responses.js"
import { WebhooksHttp } from "./Webhooks/Http.js"

// ---- the server ----------------------------------------------------------------------------------

/** While the server closes, how often connections that became idle are closed. */
const CLOSE_IDLE_EVERY_MS = 100
/** Once the API's listener is closed, how long a kept-alive connection may stay idle: a busy client's next request comes sooner. */
const CLOSE_IDLE_AFTER_MS = 1_000
/** While the server closes, how often what it still waits for is told (a long drain is not silent). */
const DRAIN_PROGRESS_EVERY_MS = 2_000

/** What a closing server still waits for. */
export interface DrainProgress {
  /** Requests received and not yet answered. */
  readonly requests: number
  /** Connections still open (idle ones are closed as they come). */
  readonly connections: number
  readonly elapsedSeconds: number
  /** True once the server has closed. */
  readonly done: boolean
}

/** What makeNodeServer takes. */
export interface NodeServerOptions {
  readonly fastLane?: FastLane | undefined
  readonly shutdownGraceSeconds: number
  /** The largest request body the listener reads (RequestBody.ts). */
  readonly bodyMaxBytes: number
  /** Paths under which every body is JSON, whatever its Content-Type says (see readBodyAsJson). */
  readonly jsonBodyPrefixes: ReadonlyArray<string>
  /** Called as the drain begins (shutdown). */
  readonly onClosing?: (() => void) | undefined
  /** Called every DRAIN_PROGRESS_EVERY_MS while it drains, and once it has closed. */
  readonly onDrainProgress?: ((progress: DrainProgress) => void) | undefined
}

/**
 * Node's server with keep-alive longer than clients' and proxies' (Node's 5 s default races
 * clients that reuse an idle connection just as the server closes it: ECONNRESET). With a fast
 * lane, each request is offered to it before the Effect server's own listener sees it. Its close
 * drains (see makeDrainingServer).
 */
export const makeNodeServer = (options: NodeServerOptions) => makeDrainingServer(options).server

/**
 * makeNodeServer's server, with its drain as plain functions: `beginDrain` (a balancer is told,
 * connections are still taken) and `closeListener` (the listener alone closes; answers say
 * `Connection: close` from then on). Its `close` does both at once.
 */
export const makeDrainingServer = (options: NodeServerOptions) => {
  const { fastLane } = options
  const server = createServer({ IncomingMessage: GuardedRequest, ServerResponse: SlottedResponse })
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000
  // Closing waits for every open connection. Node closes those idle when it begins; one busy then
  // stayed open once idle (a kept-alive client's next request went unanswered until the grace
  // ran out, and the process waited for it): every answer not yet begun says `Connection: close`
  // (node then closes its connection), and idle ones are closed as they come. One client that
  // stalls (a body never finished, a download never read) held shutdown for good: what is still
  // open when the grace (counted from the drain's beginning) runs out is cut.
  let closing = false
  const unanswered = makeOpenResponses()
  let drainStarted: number | undefined
  let progress: ReturnType<typeof setInterval> | undefined
  let cut: ReturnType<typeof setTimeout> | undefined
  const tell = (done: boolean) =>
    server.getConnections((_, connections) =>
      options.onDrainProgress?.({
        requests: unanswered.size(),
        connections: done ? 0 : connections,
        elapsedSeconds: Math.round((Date.now() - (drainStarted ?? Date.now())) / 100) / 10,
        done
      })
    )
  const closeWhenAnswered = () =>
    unanswered.forEach((response) => {
      if (!response.headersSent) response.shouldKeepAlive = false
    })
  /**
   * The drain begins: `onClosing`, its progress told, what is still open at the grace's end cut,
   * and the answers under way say `Connection: close` (their clients learn at once that this node
   * is going). A request that comes while it still listens is answered as usual: were every such
   * answer to close its connection, a busy client would connect anew for each request, and one
   * connecting just as the listener closes would meet a reset.
   */
  const beginDrain = () => {
    if (drainStarted !== undefined) return
    drainStarted = Date.now()
    options.onClosing?.()
    closeWhenAnswered()
    cut = setTimeout(() => server.closeAllConnections(), options.shutdownGraceSeconds * 1000).unref()
    progress = setInterval(() => tell(false), DRAIN_PROGRESS_EVERY_MS).unref()
  }
  /** `close` closes the listener; every answer from then on says `Connection: close`; idle connections are closed from `idleAfterMs` on. */
  const stopListening = (close: (done: (error?: Error) => void) => void, idleAfterMs: number, callback?: (error?: Error) => void) => {
    beginDrain()
    closing = true
    closeWhenAnswered()
    let idle: ReturnType<typeof setInterval> | undefined
    const idleFrom = setTimeout(() => {
      idle = setInterval(() => server.closeIdleConnections(), CLOSE_IDLE_EVERY_MS).unref()
    }, idleAfterMs).unref()
    close((error) => {
      clearTimeout(idleFrom)
      clearInterval(idle)
      clearInterval(progress)
      clearTimeout(cut)
      tell(true)
      callback?.(error)
    })
  }
  const close = server.close.bind(server)
  server.close = ((callback?: (error?: Error) => void) => {
    stopListening(close, 0, callback)
    return server
  }) as typeof server.close
  /**
   * Closes the listener alone (net.Server's close): http.Server's own also closes at once every
   * connection between two requests, where a kept-alive client's next request may already be on
   * its way (it met a reset). Such a client's next answer says `Connection: close` instead; a
   * connection still idle CLOSE_IDLE_AFTER_MS later is closed.
   */
  const closeListener = (callback: (error?: Error) => void) =>
    stopListening((done) => NetServer.prototype.close.call(server, done), CLOSE_IDLE_AFTER_MS, callback)
  const emit = server.emit.bind(server)
  server.emit = (event: string, ...args: Array<unknown>): boolean => {
    const [request, response] = args
    if (event === "request" && request instanceof GuardedRequest && response instanceof SlottedResponse) {
      if (closing) response.shouldKeepAlive = false
      if (request.method !== "GET" && request.method !== "HEAD") request.guard(options.bodyMaxBytes)
      readBodyAsJson(request, options.jsonBodyPrefixes)
      const handled = fastLane?.handle(request, response, (passed = request) => emit(event, passed, response)) === true
      // a response the fast lane has already ended is not waited for (its 'close' listener cost about 1 µs of such a request)
      if (!closing && !response.writableEnded) unanswered.add(response)
      if (handled) return true
    }
    return emit(event, ...args)
  }
  return { server, beginDrain, closeListener }
}

/**
 * Every body the merchant API, the cabinet's JSON endpoints and the admin API accept is JSON
 * (CONTRACT 6), whatever Content-Type says: a JSON body sent as text/plain, as a form (curl's `-d`
 * without a header) or with none is read as JSON, and anything else is "not JSON" and gets the
 * Error shape, instead of being read as a form and answered as if it had no fields (an admin
 * PATCH with `-d` answered 200 and changed nothing).
 */
const readBodyAsJson = (request: IncomingMessage, prefixes: ReadonlyArray<string>) => {
  if (request.method === "GET" || request.method === "HEAD") return
  if (!prefixes.some((prefix) => request.url?.startsWith(prefix))) return
  if (!request.headers["content-type"]?.startsWith("application/json")) request.headers["content-type"] = "application/json"
}

const ApiLive = HttpApiBuilder.api(MerchantApi).pipe(
  Layer.provide([BalanceHttp, DepositsHttp, CatalogueHttp, PurchasesHttp, WebhooksHttp, CabinetSignInHttp, CabinetHttp]),
  Layer.provide([AuthenticationLive, KeyOrSessionLive, CabinetSessionLive, CabinetOriginLive])
)

export const HttpLive = Layer.unwrapEffect(Effect.gen(function*() {
  const settings = yield* Settings
  const metrics = yield* Metrics
  const readiness = yield* Readiness
  const routes = [...new Set(PUBLIC_ROUTES.map((route) => route.path))]
  const responses = makeResponses("api", metrics, routes, {
    strictTransportPrefixes: settings.publicUrl.startsWith("https:") ? ["/cabinet"] : []
  })
  const runtime = yield* Effect.runtime<never>()
  const logDrain = (progress: DrainProgress) =>
    Runtime.runFork(runtime)(
      Effect.logInfo(progress.done ? "API drained" : "API draining").pipe(
        Effect.annotateLogs({
          requests_unanswered: progress.requests,
          connections_open: progress.connections,
          elapsed_seconds: progress.elapsedSeconds,
          grace_seconds: settings.shutdownGraceSeconds
        })
      )
    )
  const fastLane = yield* makeFastLane(responses, [...yield* BalanceFastRoutes, ...yield* CatalogueFastRoutes], yield* PurchasesFastRoutes)
  const { beginDrain, closeListener, server } = makeDrainingServer({
    fastLane,
    shutdownGraceSeconds: settings.shutdownGraceSeconds,
    bodyMaxBytes: API_BODY_MAX_BYTES,
    jsonBodyPrefixes: [API_PREFIX, CABINET_API_PREFIX],
    // /ready answers 503 from then on: a balancer sends no more work (the ops listener stays up)
    onClosing: readiness.markDraining,
    onDrainProgress: logDrain
  })
  const serving = HttpApiBuilder.serve(responses.middleware).pipe(
    Layer.provide([DocsLive, SpecErrors, StreamLive, WalletCallbacksLive, CabinetPageLive]),
    Layer.provide(ApiLive),
    // Per-request spans cost about a quarter of a request's CPU; traces come from service spans.
    HttpMiddleware.withTracerDisabledWhen(() => true),
    HttpServer.withLogAddress,
    Layer.provide(NodeHttpServer.layer(() => server, { port: settings.port, host: settings.host })),
    Layer.tap(() => readiness.markServing)
  )
  // built once the API serves, so released before its request handlers go: the drain ends first
  return Layer.provide(drainOnRelease(beginDrain, closeListener, settings.shutdownGraceSeconds), serving)
}))

/**
 * How long the API still takes connections once its drain began and /ready answers 503: a
 * balancer checking /ready every 500 ms takes the node out within it, so nothing it sends is
 * refused (at most a third of the grace).
 */
const LISTEN_WHILE_DRAINING_MS = 2_000
/** What the grace leaves after it runs out: connections still closing (a feed's close handshake). */
const DRAIN_WAIT_PAST_GRACE = "5 seconds"

/**
 * The API's shutdown: `stopListening` begins the drain (makeDrainingServer: /ready 503), takes
 * connections a little longer, then closes the listener; the release waits for the drain's end,
 * every connection closed (what is still open at the grace's end is cut), before the request
 * handlers are removed.
 */
const drainOnRelease = (beginDrain: () => void, closeListener: (callback: () => void) => void, graceSeconds: number) =>
  Layer.scoped(
    ApiShutdown,
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      let drainStarted: number | undefined
      const stopListening = Effect.suspend(() => {
        if (drainStarted !== undefined) return Effect.void
        drainStarted = Date.now()
        beginDrain()
        return Effect.sleep(Math.min(LISTEN_WHILE_DRAINING_MS, graceSeconds * 1000 / 3)).pipe(
          Effect.andThen(() => closeListener(() => Deferred.unsafeDone(closed, Effect.void)))
        )
      })
      const graceRanOut = Effect.zipRight(
        Effect.logWarning("the shutdown grace ran out: cutting the connections still open"),
        Deferred.await(closed).pipe(Effect.timeout(DRAIN_WAIT_PAST_GRACE), Effect.ignore)
      ).pipe(Effect.annotateLogs("grace_seconds", graceSeconds))
      yield* Effect.addFinalizer(() =>
        Effect.zipRight(
          stopListening,
          Effect.suspend(() =>
            Deferred.await(closed).pipe(
              Effect.timeout(Math.max(0, graceSeconds * 1000 - (Date.now() - drainStarted!))),
              Effect.catchTag("TimeoutException", () => graceRanOut)
            )
          )
        )
      )
      return { stopListening }
    })
  )
