/**
 * The API reference at /docs (Scalar, served whole by the service: no CDN, no web fonts, no menus
 * into the vendor's cloud) and its
 * OpenAPI document. The page is about 3.4 MB of HTML and script: it is sent gzip-compressed to
 * clients that accept it (compressed once, on the first such request).
 */
import { HttpApi, HttpApiBuilder, type HttpApiScalar, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { gzipSync } from "node:zlib"
import { DOCS_PATH, OPENAPI_PATH } from "./HttpErrors.js"

const acceptsGzip = (request: HttpServerRequest.HttpServerRequest) => /\bgzip\b/i.test(request.headers["accept-encoding"] ?? "")

const isDocs = (request: HttpServerRequest.HttpServerRequest) => request.method === "GET" && request.url.split("?")[0] === DOCS_PATH

/** Every other request passes straight through (one check of its URL). */
const DocsCompression = HttpApiBuilder.middleware(Effect.sync(() => {
  let compressed: Uint8Array | undefined
  const compress = (request: HttpServerRequest.HttpServerRequest) => (response: HttpServerResponse.HttpServerResponse) => {
    if (response.status !== 200 || response.body._tag !== "Uint8Array") return response
    if (!acceptsGzip(request)) return HttpServerResponse.setHeader(response, "vary", "Accept-Encoding")
    compressed ??= gzipSync(response.body.body)
    return HttpServerResponse.uint8Array(compressed, {
      status: 200,
      contentType: response.body.contentType,
      headers: { ...response.headers, "content-encoding": "gzip", vary: "Accept-Encoding" }
    })
  }
  return (app) => Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => isDocs(request) ? Effect.map(app, compress(request)) : app)
}))

/**
 * The page's settings: no web fonts, the Bearer key selected for "try it", and none of the menus
 * and buttons that lead to the docs vendor's cloud (the last three are Scalar's own settings, beyond
 * the typed subset HttpApiScalar names).
 */
const SCALAR: HttpApiScalar.ScalarConfig & {
  readonly authentication: { readonly preferredSecurityScheme: string }
  readonly showToolbar: "never"
  readonly hideClientButton: boolean
} = {
  withDefaultFonts: false,
  authentication: { preferredSecurityScheme: "bearer" },
  showToolbar: "never",
  hideClientButton: true
}

/**
 * GET /docs: HttpApiScalar's page, rendered on the first request (DocsPage.ts, a module of its own
 * that start-up does not load) and kept.
 */
const DocsPage = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const { api } = yield* HttpApi.Api
    const page = yield* Effect.cached(Effect.promise(() => import("./DocsPage.js").then((module) => module.renderDocsPage(api, DOCS_PATH, SCALAR))))
    yield* router.get(DOCS_PATH, Effect.map(page, ({ body, contentType }) => HttpServerResponse.uint8Array(body, { contentType })))
  })
)

export const DocsLive = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: OPENAPI_PATH }),
  DocsPage,
  DocsCompression
)
