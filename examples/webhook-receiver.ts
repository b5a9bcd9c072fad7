// A webhook receiver for the merchant purchasing service: Node.js 20+, no dependencies.
// Run: WEBHOOK_SECRET=whsec_... PORT=4000 npx tsx webhook-receiver.ts
// During a secret rotation, give both secrets: WEBHOOK_SECRET=whsec_new,whsec_old
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingMessage } from "node:http"

const secrets = (process.env.WEBHOOK_SECRET ?? "").split(",").filter((s) => s !== "")
const port = Number(process.env.PORT ?? 4000)
const TOLERANCE_SECONDS = 300
const MAX_BODY_BYTES = 1024 * 1024

if (secrets.length === 0) throw new Error("set WEBHOOK_SECRET")

const header = (request: IncomingMessage, name: string) => {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** True when the timestamp is fresh and a signature matches one of our secrets (constant-time). */
const verified = (rawBody: Buffer, request: IncomingMessage): boolean => {
  const timestamp = header(request, "x-timestamp") ?? ""
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return false
  // X-Signature uses the current secret; X-Signature-Previous the one before it, while a rotation overlaps
  const presented = [header(request, "x-signature"), header(request, "x-signature-previous")]
    .filter((s): s is string => s !== undefined)
    .map((s) => Buffer.from(s, "utf8"))
  return secrets.some((secret) => {
    const expected = Buffer.from(createHmac("sha256", secret).update(`${timestamp}.`).update(rawBody).digest("hex"), "utf8")
    return presented.some((given) => given.length === expected.length && timingSafeEqual(given, expected))
  })
}

// Event ids already accepted. Retries and support replays resend the same event_id. In production,
// write the event to your database (unique on event_id) before answering 200 and work from there:
// then neither a restart nor a duplicate loses or repeats anything. Memory keeps this example short.
const seen = new Set<string>()

/** Your work: runs after the answer was sent, so that a slow step never makes the delivery time out. */
const handle = async (event: { event_id: string; event_type: string; data: Record<string, unknown> }) => {
  switch (event.event_type) {
    case "balance.deposited":
      console.log(`processed ${event.event_id} ${event.event_type} amount=${event.data.amount} balance_after=${event.data.balance_after}`)
      break
    default:
      // purchase.* events, and any type added later
      console.log(`processed ${event.event_id} ${event.event_type} purchase=${event.data.purchase_id ?? "-"} status=${event.data.status ?? "-"}`)
  }
}

createServer((request, response) => {
  const chunks: Array<Buffer> = []
  let size = 0
  request.on("data", (chunk: Buffer) => {
    size += chunk.length
    if (size > MAX_BODY_BYTES) request.destroy()
    else chunks.push(chunk)
  })
  request.on("end", () => {
    // verify the raw bytes as received: parsing and re-serialising would change them
    const rawBody = Buffer.concat(chunks)
    if (request.method !== "POST" || !verified(rawBody, request)) {
      console.log(`rejected ${header(request, "x-event-id") ?? "-"}`)
      response.writeHead(400).end()
      return
    }
    const event = JSON.parse(rawBody.toString("utf8"))
    if (seen.has(event.event_id)) {
      console.log(`duplicate ${event.event_id}`)
      response.writeHead(200).end()
      return
    }
    seen.add(event.event_id)
    // answer first (any 2xx within the timeout is a delivery), work after
    response.writeHead(200).end()
    setImmediate(() => handle(event).catch((error) => console.error(`failed ${event.event_id}`, error)))
  })
}).listen(port, () => console.log(`webhook receiver listening on port ${port}`))
