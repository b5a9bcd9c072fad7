/**
 * What bench/webhooks sends and how its bare baseline posts it: a balance.deposited body as the
 * outbox stores it, and one plain node:http POST of it, signed as the service signs (shared by
 * bench/webhooks/run.mjs, bare.mjs and mix.mjs).
 */
import { createHmac, randomUUID } from "node:crypto"
import http from "node:http"

/** A balance.deposited event's id and body. */
export const depositEvent = () => {
  const id = randomUUID()
  const body = JSON.stringify({
    event_id: id,
    event_type: "balance.deposited",
    created_at: new Date().toISOString(),
    data: { deposit_id: randomUUID(), amount: 101.47, currency: "USD", network: "tron", tx_id: `bench-${id}`, balance_after: 1101.47 }
  })
  return { id, type: "balance.deposited", body }
}

/** POSTs `{url, secret, id, type, body}` through `agent`; resolves on a 200 once the answer is read. */
export const barePost = (agent, event) =>
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
