/**
 * The API reference page's bytes (Scalar's HTML with the OpenAPI document and Scalar's script
 * inlined). This module is imported on the first request for /docs (Docs.ts), not at start-up:
 * the script is 3.4 MB of one string literal, which every start compiled (about 0.15 s on one
 * core) and every process held as source, as a string and as the page's bytes.
 */
// from their own modules, not the package's index, whose re-export of HttpApiScalar the bundle
// cuts (scripts/bundle.mjs): through the index, the script went into a chunk start-up loads
import type { HttpApi } from "@effect/platform"
import * as HttpApiScalar from "@effect/platform/HttpApiScalar"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"

/** The page as HttpApiScalar serves it at `path`, rendered once through a router of its own. */
export const renderDocsPage = async (
  api: HttpApi.HttpApi.Any,
  path: `/${string}`,
  scalar: HttpApiScalar.ScalarConfig
): Promise<{ readonly body: Uint8Array; readonly contentType: string }> => {
  const { dispose, handler } = HttpLayerRouter.toWebHandler(HttpApiScalar.layerHttpLayerRouter({ api, path, scalar }), { disableLogger: true })
  try {
    const response = await handler(new Request(`http://docs.invalid${path}`))
    if (!response.ok) throw new Error(`the API reference page answered ${response.status}`)
    return { body: new Uint8Array(await response.arrayBuffer()), contentType: response.headers.get("content-type") ?? "text/html" }
  } finally {
    await dispose()
  }
}
