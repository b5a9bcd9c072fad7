/**
 * The public server: the merchant HttpApi with its docs and OpenAPI document, the raw routes
 * beside it (dump, stream, cabinet pages), the fast handlers of the hot routes (FastLane.ts) and
 * the request middleware every response passes through (X-Request-Id, metrics); HttpErrors.ts
 * answers what no handler answered. One node server, made and listened on here (NodeServer.ts),
 * with one 'request' and one 'upgrade' listener; its release is the API's drain (ApiShutdown.ts).
 */
import { HttpApiBuilder } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Runtime } from "effect"
import { API_PREFIX, MerchantApi } from "./Api.js"
import { ApiShutdown, makeApiShutdown } from "./ApiShutdown.js"
import { CABINET_API_PREFIX } from "./Cabinet/Api.js"
import { CabinetHttp, CabinetOriginLive, CabinetSignInHttp } from "./Cabinet/Http.js"
import { CabinetPageLive } from "./Cabinet/Page.js"
import { CatalogueFastRoutes, CatalogueHttp } from "./Catalogue/Http.js"
import { StreamLive } from "./Catalogue/Stream.js"
import { Settings } from "./Config.js"
import { DepositsHttp } from "./Deposits/Http.js"
import { WalletCallbacksLive } from "./Deposits/WalletCallbacks.js"
import { DocsLive } from "./Docs.js"
import { API_BODY_MAX_BYTES } from "./Domain/BodyLimits.js"
import { makeFastLane } from "./FastLane.js"
import { PUBLIC_ROUTES, SpecErrors } from "./HttpErrors.js"
import { AuthenticationLive, CabinetSessionLive, KeyOrSessionLive } from "./Merchants/Authentication.js"
import { BalanceFastRoutes, BalanceHttp } from "./Merchants/Http.js"
import { appHandler, listen, makeHttpServer, requestListener, upgradeListener } from "./NodeServer.js"
import { Metrics } from "./Ops/Metrics.js"
import { Readiness } from "./Ops/Readiness.js"
import { PurchasesFastRoutes, PurchasesHttp } from "./Purchases/Http.js"
import { makeResponses } from "./Responses.js"
import { type DrainProgress, makeServerDrain } from "./ServerDrain.js"
import { WebhooksHttp } from "./Webhooks/Http.js"
import { WebSocketUpgrades } from "./WebSocketUpgrades.js"

// the ops listener's server (Ops/Server.ts imports it from here)

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
  const requestOptions = { bodyMaxBytes: API_BODY_MAX_BYTES, jsonBodyPrefixes: [API_PREFIX, CABINET_API_PREFIX] }

  /**
   * The server and its two listeners: 'request' (the fast handler, else the Effect app) and
   * 'upgrade' (the Effect app, which may upgrade: the feed). Its release is the API's shutdown
   * (ApiShutdown.ts), run before the app's handlers and the services behind them go.
   */
  const serving = Effect.gen(function*() {
    const upgrades = yield* WebSocketUpgrades
    const app = yield* appHandler(yield* HttpApiBuilder.httpApp, responses.middleware)
    const server = makeHttpServer()
    const drain = makeServerDrain(server, {
      shutdownGraceSeconds: settings.shutdownGraceSeconds,
      // /ready answers 503 from then on: a balancer sends no more work (the ops listener stays up)
      onClosing: readiness.markDraining,
      onDrainProgress: logDrain
    })
    server.on("request", requestListener(requestOptions, drain, app, fastLane))
    server.on("upgrade", upgradeListener(app, upgrades.accept))
    const shutdown = yield* makeApiShutdown(drain, settings.shutdownGraceSeconds)
    yield* Effect.acquireRelease(listen(server, settings.port, settings.host), () => shutdown.release)
    yield* readiness.markServing
    return shutdown.service
  })

  return Layer.scoped(ApiShutdown, serving).pipe(
    Layer.provide([DocsLive, SpecErrors, StreamLive, WalletCallbacksLive, CabinetPageLive]),
    Layer.provide(ApiLive),
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer, NodeHttpServer.layerContext]),
    Layer.provide(WebSocketUpgrades.Default)
  )
}))
