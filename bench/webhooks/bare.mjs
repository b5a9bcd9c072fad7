/**
 * The baseline of bench/webhooks: POSTs the same signed bodies the service sends, with the same
 * headers and the same concurrency, from a plain script (a keep-alive agent, one HMAC per request).
 * Reads `{url, secret, id, type, body}` lines from the file given, and prints the elapsed ms.
 */
import { readFileSync } from "node:fs"
import http from "node:http"
import { barePost } from "./bodies.mjs"

const [file, concurrencyText] = process.argv.slice(2)
const events = readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
const concurrency = Number(concurrencyText)
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })

const started = performance.now()
let next = 0
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (next < events.length) await barePost(agent, events[next++])
}))
process.stdout.write(JSON.stringify({ ms: performance.now() - started, sent: events.length }) + "\n")
agent.destroy()
