/** The ops listener (CONTRACT 2): health, readiness, metrics, supervised fibers and the admin API. */
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Cause, Chunk, Effect, Layer } from "effect"
import { Settings } from "../Config.js"
import { errorBody } from "../Domain/Errors.js"
import { makeNodeServer } from "../Http.js"
import { ADMIN_BODY_MAX_BYTES } from "../RequestBody.js"
import { makeResponses } from "../Responses.js"
import { AdminRoutes } from "./Admin.js"
import { AdminToken } from "./AdminToken.js"
import { Fibers } from "./Fibers.js"
import { Metrics } from "./Metrics.js"
import { Readiness } from "./Readiness.js"

export const OpsServerLive = Layer.unwrapEffect(Effect.gen(function*() {
  const settings = yield* Settings
  const metrics = yield* Metrics
  const fibers = yield* Fibers
  const readiness = yield* Readiness
  const admin = yield* AdminRoutes
  const adminToken = yield* AdminToken

  const router = HttpRouter.empty.pipe(
    HttpRouter.get("/health", Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))),
    HttpRouter.get("/ready", Effect.map(readiness.report, (report) => HttpServerResponse.unsafeJson(report, { status: report.ready ? 200 : 503 }))),
    HttpRouter.get("/metrics", Effect.map(metrics.render, (text) => HttpServerResponse.text(text, { contentType: metrics.contentType }))),
    HttpRouter.get("/ops/fibers", Effect.sync(() => HttpServerResponse.unsafeJson({ fibers: fibers.list() }))),
    HttpRouter.concat(admin)
  )
  const notFound = (request: HttpServerRequest.HttpServerRequest) => {
    const isAdmin = request.url === "/admin" || request.url.startsWith("/admin/") || request.url.startsWith("/admin?")
    // all of /admin/* is under the token (CONTRACT 2), its unknown routes too: without it, nothing is told
    if (isAdmin && !adminToken.verify(request.headers["authorization"])) {
      return HttpServerResponse.text(errorBody("ADMIN_UNAUTHORIZED", "admin token required"), { status: 401, contentType: "application/json" })
    }
    // the admin API's own code for its unknown routes (README, "Admin API")
    return HttpServerResponse.text(errorBody(isAdmin ? "ADMIN_NOT_FOUND" : "NOT_FOUND", `No route for ${request.method} ${request.url}`), {
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

  const routes = Chunk.toReadonlyArray(router.routes).map((route) => route.path)
  return HttpServer.serve(app, makeResponses("ops", metrics, routes).middleware).pipe(
    HttpServer.withLogAddress,
    Layer.provide(NodeHttpServer.layer(() => makeNodeServer({ shutdownGraceSeconds: settings.shutdownGraceSeconds, bodyMaxBytes: ADMIN_BODY_MAX_BYTES }), {
      port: settings.opsPort,
      host: settings.opsHost
    }))
  )
}))
