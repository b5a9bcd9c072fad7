/**
 * The admin API served (its contract: AdminApi.ts): the groups' handlers, the token check and the
 * ADMIN_* answers, built as an HttpApp of their own for the ops listener to mount, with the
 * contract's OpenAPI document. Its HttpApi router and middleware are built in a layer graph of
 * their own: the merchant API's, in the main graph, are other instances.
 */
import { HttpApi, HttpApiBuilder, OpenApi } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AdminCatalogueHttp } from "../Catalogue/Admin.js"
import { AdminDepositsHttp } from "../Deposits/Admin.js"
import { AdminMerchantsHttp } from "../Merchants/Admin.js"
import { AdminWebhooksHttp } from "../Webhooks/Admin.js"
import { AdminApi } from "./AdminApi.js"
import { AdminAuthorizationLive, AdminErrors } from "./AdminHttp.js"

const AdminApiLive = Layer.mergeAll(
  HttpApiBuilder.api(AdminApi).pipe(
    Layer.provide([AdminMerchantsHttp, AdminDepositsHttp, AdminCatalogueHttp, AdminWebhooksHttp]),
    Layer.provide(AdminAuthorizationLive)
  ),
  AdminErrors
).pipe(Layer.provideMerge(HttpApiBuilder.Router.Live), Layer.provideMerge(HttpApiBuilder.Middleware.layer))

/** The path of every admin route, as the router matches them (`:id` segments). */
export const ADMIN_ROUTE_PATHS: ReadonlyArray<string> = (() => {
  const paths = new Set<string>()
  HttpApi.reflect(AdminApi, { onGroup: () => undefined, onEndpoint: ({ endpoint }) => paths.add(endpoint.path) })
  return [...paths]
})()

/**
 * The admin API as an HttpApp, and its OpenAPI document. Both are made when first asked for (the
 * app lives as long as the scope): building them costs about 100 ms, which start-up need not wait for.
 */
export const AdminApp = Effect.gen(function*() {
  const scope = yield* Effect.scope
  const built = yield* Effect.cached(
    Effect.flatMap(Layer.buildWithScope(AdminApiLive, scope), (context) => Effect.provide(HttpApiBuilder.httpApp, context))
  )
  let document: OpenApi.OpenAPISpec | undefined
  return {
    app: Effect.flatMap(built, (app) => app),
    openApi: () => document ??= OpenApi.fromApi(AdminApi)
  } as const
})
