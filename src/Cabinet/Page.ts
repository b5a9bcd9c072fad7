/**
 * The cabinet's web page (CONTRACT 7): /cabinet and /cabinet/invite serve one HTML page whose module
 * and styles are served here too (built from web/cabinet into dist/cabinet), so it works with no
 * internet. Every answer carries a strict Content-Security-Policy: no inline script, nothing from
 * elsewhere, no framing.
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const HTML = "text/html; charset=utf-8"
/** Each route of the page and the file of dist/cabinet it serves. */
const PAGE_FILES: ReadonlyArray<readonly [path: `/${string}`, file: string, contentType: string]> = [
  ["/cabinet", "index.html", HTML],
  ["/cabinet/invite", "index.html", HTML],
  ["/cabinet/app.js", "app.js", "text/javascript; charset=utf-8"],
  ["/cabinet/app.css", "app.css", "text/css; charset=utf-8"]
]

export const CABINET_PAGE_PATHS = PAGE_FILES.map(([path]) => path)

const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

const SECURITY_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  // the page is small and changes with each release: always revalidated
  "cache-control": "no-cache"
}

/** dist/cabinet: two levels up from src/Cabinet, one from dist/bundle. */
const pageDirectory = (): string | undefined => {
  for (const relative of ["../../dist/cabinet/", "../cabinet/"]) {
    const dir = fileURLToPath(new URL(relative, import.meta.url))
    if (existsSync(`${dir}app.js`)) return dir
  }
  return undefined
}

export const CabinetPageLive = Layer.unwrapEffect(Effect.sync(() => {
  const dir = pageDirectory()
  const answer = (name: string, contentType: string) =>
    Effect.succeed(
      dir === undefined
        ? HttpServerResponse.text("The cabinet page is not built: run npm run build.", { status: 503, headers: SECURITY_HEADERS })
        : HttpServerResponse.uint8Array(readFileSync(`${dir}${name}`), { contentType, headers: SECURITY_HEADERS })
    )
  return HttpApiBuilder.Router.use((router) => Effect.forEach(PAGE_FILES, ([path, name, contentType]) => router.get(path, answer(name, contentType))))
}))
