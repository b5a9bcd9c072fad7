/**
 * The API reference at /docs: served whole by the service, gzip-compressed for clients that accept
 * it, and loaded in a real browser (Debian's chromium) without a single request to another origin.
 */
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
