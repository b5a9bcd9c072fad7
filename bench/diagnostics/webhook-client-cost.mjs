/**
 * bench/diagnostics/webhook-client-cost: the CPU cost, in the sending process, of one webhook
 * attempt made by the service's Delivery.send (undici, through its handler interface) against the
 * bare baseline's plain node:http POST (bench/webhooks/bare.mjs), to the bench's receiver, with the
 * same signed bodies and concurrency. Isolates the HTTP client's share of a delivery from the
 * sender's bookkeeping (claims, records) that bench/webhooks measures as a whole.
 *
 *   node bench/diagnostics/webhook-client-cost.mjs [--events 5000] [--concurrency 4] [--rounds 3]
 *
 * Run it pinned (`taskset -c 0`) with the receiver on the other core for figures comparable to
 * bench/webhooks; it needs the compiled sources (npm run build).
 */
import { execFileSync, fork } from "node:child_process"
import { createHmac, randomUUID } from "node:crypto"
import http from "node:http"
import { join } from "node:path"
import { makeDelivery } from "../../dist/src/Webhooks/Delivery.js"
import { systemResolve } from "../../dist/src/Webhooks/Targets.js"
import { argOptions, log, ROOT } from "../lib/harness.mjs"

const opts = argOptions(process.argv.slice(2), { events: 5000, concurrency: 4, rounds: 3 })
const receiver = fork(join(ROOT, "bench/webhooks/receiver.mjs"))
const { port } = await new Promise((resolve) => receiver.once("message", resolve))
try {
  execFileSync("taskset", ["-a", "-c", "-p", "1", String(receiver.pid)], { stdio: "ignore" })
} catch {
  // no taskset, or one core: the figures still compare the two clients
}
const url = `http://127.0.0.1:${port}/m/0`
const secret = `whsec_${"x".repeat(40)}`
const makeEvent = () => {
  const id = randomUUID()
  const body = JSON.stringify({
    event_id: id,
    event_type: "balance.deposited",
    created_at: new Date().toISOString(),
    data: { deposit_id: randomUUID(), amount: 101.47, currency: "USD", network: "tron", tx_id: `bench-${id}`, balance_after: 1101.47 }
  })
  return { url, eventId: id, eventType: "balance.deposited", body, secret, previousSecret: null }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency })
const bare = (event) =>
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
        "x-event-id": event.eventId,
        "x-event": event.eventType,
        "x-timestamp": timestamp,
        "x-signature": createHmac("sha256", event.secret).update(`${timestamp}.`).update(body).digest("hex")
      }
    }, (response) => {
      response.resume()
      response.on("end", resolve)
    })
    request.on("error", reject)
    request.end(body)
  })
const delivery = makeDelivery({ timeoutMs: 10_000, allowPrivateTargets: true, resolve: systemResolve })
const service = (event) =>
  new Promise((resolve, reject) => delivery.send(event, (outcome) => (outcome.kind === "2xx" ? resolve() : reject(new Error(outcome.detail)))))

const run = async (name, post) => {
  const events = Array.from({ length: opts.events }, makeEvent)
  const cpu0 = process.cpuUsage()
  const started = performance.now()
  let next = 0
  await Promise.all(Array.from({ length: opts.concurrency }, async () => {
    while (next < events.length) await post(events[next++])
  }))
  const ms = performance.now() - started
  const cpu = process.cpuUsage(cpu0)
  return { name, perSecond: Math.round((events.length * 1000) / ms), cpuUsEach: Math.round((cpu.user + cpu.system) / events.length) }
}

// a first pass of each compiles the code paths; not reported
await run("bare", bare)
await run("service", service)
for (let round = 1; round <= opts.rounds; round++) {
  for (const result of [await run("bare node:http", bare), await run("service Delivery.send", service)]) {
    log(`round ${round}: ${result.name}: ${result.perSecond}/s, ${result.cpuUsEach} µs CPU per attempt`)
  }
}
receiver.kill()
agent.destroy()
process.exit(0)
