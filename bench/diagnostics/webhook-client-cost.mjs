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
import http from "node:http"
import { join } from "node:path"
import { makeDelivery } from "../../dist/src/Webhooks/Delivery.js"
import { systemResolve } from "../../dist/src/Webhooks/Targets.js"
import { argOptions, log, ROOT } from "../lib/harness.mjs"
import { barePost, depositEvent } from "../webhooks/bodies.mjs"

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
  const { id, type, body } = depositEvent()
  return { url, eventId: id, id, eventType: type, type, body, secret, previousSecret: null }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency })
const bare = (event) => barePost(agent, event)
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
