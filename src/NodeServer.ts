/**
 * The project's node servers: made here, listened on and closed here, each with one 'request'
 * listener (`serveNode`) that prepares a request (its body guarded, read as JSON, told to close
 * its connection while the server drains), offers it to a fast handler, and hands whatever that
 * declines to the Effect app's node handler (`NodeHttpServer.makeHandler`). Nothing of node's or
 * the platform's is replaced: the drain (ServerDrain.ts) is called by the owner at shutdown.
 */
import { type HttpApp, HttpMiddleware, HttpServerError, type HttpServerRequest } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, type Scope } from "effect"
import { createServer, type IncomingMessage, Server, type ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { SlottedResponse } from "./OpenResponses.js"
import { GuardedRequest } from "./RequestBody.js"
import { type DrainOptions, makeServerDrain, type ServerDrain } from "./ServerDrain.js"

/** How a listener reads requests. */
export interface RequestOptions {
  /** The largest request body the listener reads (RequestBody.ts). */
  readonly bodyMaxBytes: number
  /** Paths under which every body is JSON, whatever its Content-Type says (see readBodyAsJson). */
  readonly jsonBodyPrefixes: ReadonlyArray<string>
}

/** Answers a request itself and returns true, or returns false having done nothing (FastLane.ts). */
export interface FastHandler {
  readonly handle: (request: GuardedRequest, response: SlottedResponse<GuardedRequest>) => boolean
}

/** The Effect app's node handler (`NodeHttpServer.makeHandler`). */
export type NodeHandler = (request: IncomingMessage, response: ServerResponse) => void

/** The 'upgrade' listener's part: a response to hand the request to the app with (WebSocketUpgrades.ts). */
export type UpgradeAcceptor = (request: IncomingMessage, socket: Duplex, head: Buffer) => ServerResponse | undefined

/**
 * Node's server with keep-alive longer than clients' and proxies' (Node's 5 s default races
 * clients that reuse an idle connection just as the server closes it: ECONNRESET).
 */
export const makeHttpServer = () => {
  const server = createServer({ IncomingMessage: GuardedRequest, ServerResponse: SlottedResponse })
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000
  return server
}

/**
 * Every body the merchant API, the cabinet's JSON endpoints and the admin API accept is JSON
 * (CONTRACT 6), whatever Content-Type says: a JSON body sent as text/plain, as a form (curl's `-d`
 * without a header) or with none is read as JSON, and anything else is "not JSON" and gets the
 * Error shape, instead of being read as a form and answered as if it had no fields (an admin
 * PATCH with `-d` answered 200 and changed nothing).
 */
const readBodyAsJson = (request: IncomingMessage, prefixes: ReadonlyArray<string>) => {
  if (!prefixes.some((prefix) => request.url?.startsWith(prefix))) return
  if (!request.headers["content-type"]?.startsWith("application/json")) request.headers["content-type"] = "application/json"
}

/** What a request needs before any handler sees it: its body guarded and read as JSON where the listener says so. */
export const prepareRequest = (request: GuardedRequest, options: RequestOptions) => {
  if (request.method === "GET" || request.method === "HEAD") return
  request.guard(options.bodyMaxBytes)
  readBodyAsJson(request, options.jsonBodyPrefixes)
}

/** The one 'request' listener: prepared, offered to the fast handler, else to the Effect app. */
export const requestListener =
  (options: RequestOptions, drain: ServerDrain, app: NodeHandler, fast: FastHandler | undefined) =>
  (request: GuardedRequest, response: SlottedResponse<GuardedRequest>) => {
    drain.admit(response)
    prepareRequest(request, options)
    const handled = fast !== undefined && fast.handle(request, response)
    drain.track(response)
    if (!handled) app(request, response)
  }

/** The one 'upgrade' listener: the request goes to the Effect app with the response `accept` gives it. */
export const upgradeListener = (app: NodeHandler, accept: UpgradeAcceptor) => (request: IncomingMessage, socket: Duplex, head: Buffer) => {
  const response = accept(request, socket, head)
  if (response !== undefined) app(request, response)
}

/**
 * The Effect app's node handler, with no per-request tracing span (a quarter of an HttpApi
 * request's CPU; traces come from the services' spans).
 */
export const appHandler = <E, R, App extends HttpApp.Default<unknown, unknown>>(
  app: HttpApp.Default<E, R>,
  middleware: HttpMiddleware.HttpMiddleware.Applied<App, E, R>
) => Effect.locally(NodeHttpServer.makeHandler(app, middleware), HttpMiddleware.currentTracerDisabledWhen, () => true)

/** Listens, and logs the address; the owner closes it (its drain). The port it listens on. */
export const listen = (server: Server, port: number, host: string): Effect.Effect<number, HttpServerError.ServeError> =>
  Effect.gen(function*() {
    yield* Effect.async<void, HttpServerError.ServeError>((resume) => {
      const onError = (cause: Error) => resume(Effect.fail(new HttpServerError.ServeError({ cause })))
      server.once("error", onError)
      server.listen({ port, host }, () => {
        server.off("error", onError)
        resume(Effect.void)
      })
    })
    const address = server.address()
    if (typeof address === "string" || address === null) return yield* Effect.die(new Error(`listening on ${address}, not on a port`))
    yield* Effect.log(`Listening on http://${address.address === "::" ? "0.0.0.0" : address.address}:${address.port}`)
    return address.port
  })

/** Closes `server` through its drain, within the grace: the listener at once, connections as they finish. */
export const closeThroughDrain = (drain: ServerDrain, idleAfterMs: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => drain.closeListener(idleAfterMs, () => resume(Effect.void)))

/**
 * A node server that serves `app` on its one listener and drains when its scope ends (for the ops
 * listener; the merchant API is made in Http.ts, with a fast handler and upgrades). The port it
 * listens on.
 */
export const serveNode = <E, R, App extends HttpApp.Default<unknown, unknown>>(
  app: HttpApp.Default<E, R>,
  middleware: HttpMiddleware.HttpMiddleware.Applied<App, E, R>,
  options: RequestOptions & DrainOptions & { readonly port: number; readonly host: string }
): Effect.Effect<number, HttpServerError.ServeError, Scope.Scope | Exclude<Effect.Effect.Context<App>, Scope.Scope | HttpServerRequest.HttpServerRequest>> =>
  Effect.gen(function*() {
    const server = makeHttpServer()
    const drain = makeServerDrain(server, options)
    const handler = yield* appHandler(app, middleware)
    server.on("request", requestListener(options, drain, handler, undefined))
    return yield* Effect.acquireRelease(listen(server, options.port, options.host), () => closeThroughDrain(drain, 0))
  })
