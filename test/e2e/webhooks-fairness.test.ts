/**
 * Fairness and the network guard of webhook delivery (CONTRACT 4): a merchant whose receiver hangs
 * holds at most WEBHOOK_MERCHANT_CONCURRENCY attempts and delays only itself; a process holds at
 * most WEBHOOK_CONCURRENCY; with private targets not allowed, an internal receiver is never
 * reached. No assertion here waits on a clock: each compares what happened while a hung receiver
 * still held its connections.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Merchant, pollUntil, PURCHASE_ENV } from "../support/purchases.js"
import { metricValue, type RunningServer, startServer } from "../support/server.js"
import { awaitDeliveries, type Receiver, startReceiver, verdictOf } from "../support/webhooks.js"

let receiver: Receiver
beforeAll(async () => {
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver?.close()
})

const eventsOf = async (server: RunningServer, m: Merchant) =>
  (await server.merchant(m.apiKey).call((client) => client.webhooks.listWebhookEvents({ urlParams: { limit: 200 } }))).events

const deposits = (server: RunningServer, m: Merchant, n: number) =>
  Promise.all(Array.from({ length: n }, async () => {
    await server.adminApi.call((client) =>
      client.deposits.creditDeposit({ payload: { merchant_id: m.id, network: "tron", amount: 10, tx_id: `tx-${randomUUID()}` } })
    )
  }))

describe("fairness", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer({
      env: {
        ...PURCHASE_ENV,
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
        // a hung receiver holds its attempts for the whole test
        WEBHOOK_TIMEOUT_SECONDS: "100",
        WEBHOOK_MERCHANT_CONCURRENCY: "2",
        WEBHOOK_CONCURRENCY: "4"
      }
    })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("a merchant whose receiver hangs holds 2 attempts; another merchant's events all arrive meanwhile", async () => {
    const hanging = await server.createMerchant(undefined, receiver.url(`/hang/${randomUUID()}`))
    await deposits(server, hanging, 6)
    await pollUntil("the hanging merchant's two attempts open", async () => receiver.hung() === 2 ? true : undefined)

    const pathB = `/ok/${randomUUID()}`
    const other = await server.createMerchant(undefined, receiver.url(pathB))
    await deposits(server, other, 6)
    const arrived = await awaitDeliveries(receiver, pathB, 6)
    for (const delivery of arrived) expect(verdictOf(delivery, other.webhookSecret)).toBe("valid")
    // all that while, the hung receiver still held its two attempts, and never more than two
    expect(receiver.hung()).toBe(2)
    expect(receiver.maxHung()).toBe(2)
    expect(await metricValue(server, `webhook_merchant_in_flight{merchant_id="${hanging.id}"}`)).toBe(2)
    const events = await eventsOf(server, hanging)
    expect(events.map((e) => e.delivery_status).sort()).toEqual(["pending", "pending", "pending", "pending", "sending", "sending"])
    // its receiver goes away for good: its later attempts are refused at once and hold nothing
    await server.adminApi.call((client) => client.merchants.updateMerchant({ path: { id: hanging.id }, payload: { webhook_url: null } }))
    receiver.releaseHung()
  })

  it("a process holds at most WEBHOOK_CONCURRENCY attempts, whatever the number of hanging merchants", async () => {
    const before = receiver.maxHung()
    expect(receiver.hung()).toBe(0)
    const merchants = await Promise.all([1, 2, 3].map(() => server.createMerchant(undefined, receiver.url(`/hang/${randomUUID()}`))))
    await Promise.all(merchants.map((m) => deposits(server, m, 3)))
    await pollUntil("four attempts open", async () => receiver.hung() === 4 ? true : undefined)
    // every merchant's events are due; only four can be in flight
    const inFlight = await Promise.all(merchants.map((m) => metricValue(server, `webhook_merchant_in_flight{merchant_id="${m.id}"}`)))
    expect(inFlight.reduce((a, b) => a + b, 0)).toBe(4)
    expect(Math.max(...inFlight)).toBeLessThanOrEqual(2)
    expect(receiver.hung()).toBe(4)
    expect(Math.max(before, 4)).toBe(receiver.maxHung())
    receiver.releaseHung()
  })
})

describe("private targets not allowed (the default)", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer({ env: { ...PURCHASE_ENV, WEBHOOK_RETRY_SCHEDULE: "0,0.1" } })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("a webhook URL on loopback (by address or by localhost) is refused before any byte: 0, then failed; the receiver sees no connection", async () => {
    const connections = receiver.connections()
    const port = new URL(receiver.url("/")).port
    const merchants = await Promise.all([
      `http://127.0.0.1:${port}/ok/${randomUUID()}`,
      `http://localhost:${port}/ok/${randomUUID()}`,
      `http://[::1]:${port}/ok/${randomUUID()}`,
      `http://[::ffff:127.0.0.1]:${port}/ok/${randomUUID()}`
    ].map((url) => server.createMerchant(undefined, url)))
    await Promise.all(merchants.map((m) => deposits(server, m, 1)))
    for (const m of merchants) {
      const [event] = await pollUntil("a failed event", async () => {
        const events = await eventsOf(server, m)
        return events[0]?.delivery_status === "failed" ? events : undefined
      })
      expect(event).toMatchObject({ delivery_status: "failed", delivery_attempts: 2, last_response_code: 0 })
    }
    expect(receiver.connections()).toBe(connections)
    expect(await metricValue(server, "webhook_attempts_total{outcome=\"pre-flight\"}")).toBe(8)
  })
})
