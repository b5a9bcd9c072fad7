/**
 * The bare baseline of bench/catalogue: `node:http`, nothing else. It holds the responses the
 * service gave (fetched once by run.mjs) and answers each URL (path and query) with the same
 * status, content-type and body bytes: the floor of what serving a catalogue page can cost.
 *
 * Environment: PORT, HOST (127.0.0.1), RESPONSES (a JSON file: { url: { status, contentType,
 * contentEncoding?, body (base64) } }).
 * Prints "listening <port>" on stdout once it accepts connections.
 */
import { readFileSync } from "node:fs"
import { createServer } from "node:http"

const port = Number(process.env.PORT ?? 0)
const host = process.env.HOST ?? "127.0.0.1"
const responses = new Map(
  Object.entries(JSON.parse(readFileSync(process.env.RESPONSES, "utf8")))
    .map(([url, r]) => [url, {
      status: r.status,
      headers: { "content-type": r.contentType, ...(r.contentEncoding ? { "content-encoding": r.contentEncoding } : {}) },
      body: Buffer.from(r.body, "base64")
    }])
)
const notFound = Buffer.from(JSON.stringify({ error: { code: "MERCHANT_NOT_FOUND", message: "not found" } }))

const server = createServer((req, res) => {
  const r = responses.get(req.url)
  if (r === undefined) {
    res.writeHead(404, { "content-type": "application/json", "content-length": notFound.length })
    return res.end(notFound)
  }
  res.writeHead(r.status, { ...r.headers, "content-length": r.body.length })
  res.end(r.body)
})

server.listen(port, host, () => {
  process.stdout.write(`listening ${server.address().port}\n`)
})

const stop = () => {
  server.close()
  server.closeAllConnections?.()
  process.exit(0)
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
