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

export const CABINET_PAGE_PATHS = ["/cabinet", "/cabinet/invite", "/cabinet/app.js", "/cabinet/app.css"] as const

export const CONTENT_SECURITY_POLICY = [
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
  const file = (name: string, contentType: string) => {
    const body = dir === undefined ? undefined : readFileSync(`${dir}${name}`)
    return Effect.succeed(
      body === undefined
        ? HttpServerResponse.text("The cabinet page is not built: run npm run build.", { status: 503, headers: SECURITY_HEADERS })
        : HttpServerResponse.uint8Array(body, { contentType, headers: SECURITY_HEADERS })
    )
  }
  const html = file("index.html", "text/html; charset=utf-8")
  return HttpApiBuilder.Router.use((router) =>
    Effect.all([
      router.get("/cabinet", html),
      router.get("/cabinet/invite", html),
      router.get("/cabinet/app.js", file("app.js", "text/javascript; charset=utf-8")),
      router.get("/cabinet/app.css", file("app.css", "text/css; charset=utf-8"))
    ])
  )
}))
