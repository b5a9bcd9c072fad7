/**
 * The receiver of bench/webhooks: a minimal node:http server answering 200 at once. Over IPC:
 * `reset` (forget what arrived), `status` (how many arrived, when the first and last did, and the
 * latency of each from its body's created_at to its arrival, by event type).
 */
import { createServer } from "node:http"

let count = 0
let first = 0
let last = 0
let latencies = []
let keepLatencies = false

const server = createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    const now = Date.now()
    if (count === 0) first = now
    count += 1
    last = now
    if (keepLatencies) {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      latencies.push({ type: body.event_type, ms: now - Date.parse(body.created_at) })
    }
    response.writeHead(200, { "content-length": "2" }).end("ok")
  })
})

server.listen(0, "127.0.0.1", () => process.send({ ready: true, port: server.address().port }))

process.on("message", (message) => {
  if (message.op === "reset") {
    count = 0
    first = 0
    last = 0
    latencies = []
    keepLatencies = message.latencies === true
  }
  process.send({ replyTo: message.id, count, first, last, latencies: message.op === "status" && message.latencies ? latencies : undefined })
})
