/**
 * The baseline of bench/webhooks: POSTs the same signed bodies the service sends, with the same
 * headers and the same concurrency, from a plain script (a keep-alive agent, one HMAC per request).
 * Reads `{url, secret, id, type, body}` lines from the file given, and prints the elapsed ms.
 */
import { createHmac } from "node:crypto"
import { readFileSync } from "node:fs"
import http from "node:http"

const [file, concurrencyText] = process.argv.slice(2)
const events = readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
const concurrency = Number(concurrencyText)
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })

const post = (event) =>
  new Promise((resolve, reject) => {
    const body = Buffer.from(event.body, "utf8")
    const timestamp = String(Math.floor(Date.now() / 1000))
    const request = http.request(event.url, {
      method: "POST",
      agent,
      headers: {
        "content-type": "application/json",
        "content-length": body.length,
        "user-agent": "bench-bare",
        "x-event-id": event.id,
        "x-event": event.type,
        "x-timestamp": timestamp,
        "x-signature": createHmac("sha256", event.secret).update(`${timestamp}.`).update(body).digest("hex")
      }
    }, (response) => {
      response.resume()
      response.on("end", () => (response.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${response.statusCode}`))))
    })
    request.on("error", reject)
    request.end(body)
  })

const started = performance.now()
let next = 0
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (next < events.length) await post(events[next++])
}))
process.stdout.write(JSON.stringify({ ms: performance.now() - started, sent: events.length }) + "\n")
agent.destroy()
