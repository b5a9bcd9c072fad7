/**
 * The API reference at /docs: served whole by the service, gzip-compressed for clients that accept
 * it, and loaded in a real browser (Debian's chromium) without a single request to another origin.
 */
import { readdirSync, readFileSync } from "node:fs"
import { gunzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { hasBrowser, launchChromium } from "../support/browser.js"
import { type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server?.stop()
})

describe("/docs", () => {
  it("is gzip-compressed when the client accepts it, and the same page either way", async () => {
    const plain = await fetch(`${server.baseUrl}/docs`, { headers: { "accept-encoding": "identity" } })
    const plainBody = Buffer.from(await plain.arrayBuffer())
    expect(plain.headers.get("content-encoding")).toBeNull()
    expect(plain.headers.get("vary")).toContain("Accept-Encoding")
    // node's fetch would decompress: read the bytes as sent
    const { request } = await import("node:http")
    const compressed = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      request(`${server.baseUrl}/docs`, { headers: { "accept-encoding": "gzip, deflate" } }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }))
      }).on("error", reject).end()
    })
    expect(compressed.headers["content-encoding"]).toBe("gzip")
    expect(compressed.body.length).toBeLessThan(plainBody.length / 3)
    expect(gunzipSync(compressed.body).equals(plainBody)).toBe(true)
  })

  it.skipIf(!hasBrowser)("loads in a browser with no request to another origin", async () => {
    const browser = await launchChromium()
    try {
      const page = await browser.newPage()
      const elsewhere: Array<string> = []
      page.on("request", (r) => {
        if (!r.url().startsWith(server.baseUrl) && !r.url().startsWith("data:")) elsewhere.push(r.url())
      })
      await page.goto(`${server.baseUrl}/docs`)
      await page.getByText("Merchant Purchasing API").first().waitFor()
      await page.waitForLoadState("networkidle")
      expect(elsewhere).toEqual([])
    } finally {
      await browser.close()
    }
  }, 120_000)
})

describe("the page's script", () => {
  // the bundle `npm start` runs (globalSetup builds it when a source is newer)
  const BUNDLE = new URL("../../dist/bundle/", import.meta.url)
  const source = (file: string) => readFileSync(new URL(file, BUNDLE), "latin1")
  const SCRIPT = "Minified by jsDelivr"

  it("is not in what a start loads: main.mjs, App's chunk and what they import; only the page's own chunk has it", () => {
    const loaded = new Set<string>()
    const load = (file: string) => {
      if (loaded.has(file)) return
      loaded.add(file)
      const text = source(file)
      for (const [, imported] of text.matchAll(/from\s*"\.\/([^"]+)"/g)) load(imported!)
      // the one module main.mjs imports while starting, not on a request
      for (const [, imported] of text.matchAll(/import\("\.\/(App-[^"]+)"\)/g)) load(imported!)
    }
    load("main.mjs")
    expect([...loaded].some((file) => file.startsWith("App-"))).toBe(true)
    expect([...loaded].filter((file) => source(file).includes(SCRIPT))).toEqual([])
    const withScript = readdirSync(BUNDLE).filter((file) => file.endsWith(".mjs") && source(file).includes(SCRIPT))
    expect(withScript).toHaveLength(1)
    expect(withScript[0]).toMatch(/^DocsPage-/)
  })
})
