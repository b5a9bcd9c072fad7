/** The ops listener (CONTRACT 2): health, readiness, metrics, supervised fibers and the admin API. */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Cause, Chunk, Effect, Layer } from "effect"
import { Settings } from "../Config.js"
import { ADMIN_BODY_MAX_BYTES } from "../Domain/BodyLimits.js"
import { errorBody } from "../Domain/Errors.js"
import { serveNode } from "../NodeServer.js"
import { makeResponses } from "../Responses.js"
import { ADMIN_ROUTE_PATHS, AdminApp } from "./Admin.js"
import { ADMIN_OPENAPI_PATH } from "./AdminApi.js"
import { AdminToken } from "./AdminToken.js"
import { Fibers } from "./Fibers.js"
import { Metrics } from "./Metrics.js"
import { Readiness } from "./Readiness.js"

/** What GET / answers: the listener's routes, for an operator finding their way. */
const OPS_INDEX = {
  service: "merchant-purchasing-service, ops listener",
  endpoints: [
    { method: "GET", path: "/health", description: "200 while the process runs" },
    { method: "GET", path: "/ready", description: "200 when every readiness check passes, else 503 with the checks" },
    { method: "GET", path: "/metrics", description: "Prometheus text" },
    { method: "GET", path: "/ops/fibers", description: "each supervised fiber: state, restarts, last error, last heartbeat" },
    { method: "*", path: "/admin/*", description: "the admin API, under Authorization: Bearer <ADMIN_TOKEN>" },
    { method: "GET", path: ADMIN_OPENAPI_PATH, description: "the admin API's OpenAPI document (under the admin token)" }
  ]
} as const

export const OpsServerLive = Layer.unwrapScoped(Effect.gen(function*() {
  const settings = yield* Settings
  const metrics = yield* Metrics
  const fibers = yield* Fibers
  const readiness = yield* Readiness
  const admin = yield* AdminApp
  const adminToken = yield* AdminToken
  const unauthorized = HttpServerResponse.text(errorBody("ADMIN_UNAUTHORIZED", "admin token required"), { status: 401, contentType: "application/json" })

  // the admin API with its own document, under the admin token as all of /admin/* is
  const adminApp = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    request.method === "GET" && request.url.split("?")[0] === ADMIN_OPENAPI_PATH
      ? Effect.succeed(adminToken.verify(request.headers["authorization"]) ? HttpServerResponse.unsafeJson(admin.openApi()) : unauthorized)
      : admin.app)
  const router = HttpRouter.empty.pipe(
    HttpRouter.get("/", Effect.succeed(HttpServerResponse.unsafeJson(OPS_INDEX))),
    HttpRouter.get("/health", Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))),
    HttpRouter.get("/ready", Effect.map(readiness.report, (report) => HttpServerResponse.unsafeJson(report, { status: report.ready ? 200 : 503 }))),
    HttpRouter.get("/metrics", Effect.map(metrics.render, (text) => HttpServerResponse.text(text, { contentType: metrics.contentType }))),
    HttpRouter.get("/ops/fibers", Effect.sync(() => HttpServerResponse.unsafeJson({ fibers: fibers.list() }))),
    HttpRouter.mountApp("/admin", adminApp, { includePrefix: true })
  )
  const notFound = (request: HttpServerRequest.HttpServerRequest) => {
    const isAdmin = request.url === "/admin" || request.url.startsWith("/admin/") || request.url.startsWith("/admin?")
    // all of /admin/* is under the token (CONTRACT 2), its unknown routes too: without it, nothing is told
    if (isAdmin && !adminToken.verify(request.headers["authorization"])) return unauthorized
    // the ops listener's code set is the admin API's (README, "Admin API"): GET / lists the routes
    return HttpServerResponse.text(errorBody("ADMIN_NOT_FOUND", `No route for ${request.method} ${request.url}; GET / lists the routes`), {
      status: 404,
      contentType: "application/json"
    })
  }
  const app = Effect.catchTag(router, "RouteNotFound", () => Effect.map(HttpServerRequest.HttpServerRequest, notFound)).pipe(
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(
          Effect.logError("ops request failed", cause),
          HttpServerResponse.text(errorBody("INTERNAL_ERROR", "Internal error."), { status: 500, contentType: "application/json" })
        )
    )
  )

  const routes = [
    ...Chunk.toReadonlyArray(router.routes).map((route) => route.path).filter((path) => !path.startsWith("/admin")),
    ...ADMIN_ROUTE_PATHS,
    ADMIN_OPENAPI_PATH
  ]
  return Layer.scopedDiscard(serveNode(app, makeResponses("ops", metrics, routes).middleware, {
    shutdownGraceSeconds: settings.shutdownGraceSeconds,
    bodyMaxBytes: ADMIN_BODY_MAX_BYTES,
    jsonBodyPrefixes: ["/admin/"],
    port: settings.opsPort,
    host: settings.opsHost
  })).pipe(Layer.provide(NodeHttpServer.layerContext))
}))
