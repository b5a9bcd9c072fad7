/**
 * The receiver of bench/webhooks: a minimal node:http server answering 200 at once, except under
 * `/fail` (500 at once) and `/hang` (no answer until hanging is turned off). Over IPC: `reset`
 * (forget what arrived), `status` (how many 200s were answered, when the first and last were, and
 * the latency of each from its body's created_at to its arrival, by event type), `hang` (`on`:
 * false answers what hangs with a 500, and later `/hang` requests at once).
 */
import { createServer } from "node:http"

let count = 0
let first = 0
let last = 0
let latencies = []
let keepLatencies = false
let hanging = true
const hung = new Set()

const server = createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    const path = request.url ?? "/"
    if (path.startsWith("/fail") || (path.startsWith("/hang") && !hanging)) {
      response.writeHead(500, { "content-length": "2" }).end("no")
      return
    }
    if (path.startsWith("/hang")) {
      hung.add(response)
      response.on("close", () => hung.delete(response))
      return
    }
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
  if (message.op === "hang") {
    hanging = message.on === true
    if (!hanging) {
      for (const response of hung) response.writeHead(500, { "content-length": "2" }).end("no")
      hung.clear()
    }
  }
  process.send({ replyTo: message.id, count, first, last, latencies: message.op === "status" && message.latencies ? latencies : undefined })
})
