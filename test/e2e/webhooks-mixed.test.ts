/**
 * One service process sending to every kind of merchant at once: merchants without a webhook URL
 * (each attempt refused before any byte, ending inside the sender's loop), a receiver that refuses
 * connections, one that answers 500, one that never answers, and ten that answer 200.
 * The live merchants get every event, signed, soon after it was created; the sender never stops;
 * the hanging receiver never sees more connections than the merchant's limit, however many of its
 * attempts time out.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { pollUntil, PURCHASE_ENV } from "../support/purchases.js"
import { freePort, type RunningServer, startServer } from "../support/server.js"
import { bodyOf, deliveriesTo, headerOf, type Receiver, startReceiver, verdictOf } from "../support/webhooks.js"

const PER_MERCHANT = 4
/** Deposits per merchant (one balance.deposited event each), made in rounds across all merchants. */
const ROUNDS = 12
/** Five attempts 0.2 s apart: the failing merchants keep being attempted while the live ones are. */
const ENV = {
  ...PURCHASE_ENV,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_TIMEOUT_SECONDS: "1",
  WEBHOOK_RETRY_SCHEDULE: "0,0.2,0.2,0.2,0.2",
  WEBHOOK_MERCHANT_CONCURRENCY: String(PER_MERCHANT)
}

/** The nearest-rank percentile of sorted values. */
const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!

interface Hooked {
  readonly id: string
  readonly apiKey: string
  readonly secret: string
  readonly path: string
}

let server: RunningServer
const receivers: Array<Receiver> = []
const receiver = async () => {
  const started = await startReceiver()
  receivers.push(started)
  return started
}
beforeAll(async () => {
  server = await startServer({ env: ENV })
})
afterAll(async () => {
  await server?.stop()
  await Promise.all(receivers.map((r) => r.close()))
})

const merchantAt = async (url: (path: string) => string | null, prefix: string): Promise<Hooked> => {
  const path = `${prefix}/${randomUUID()}`
  const m = await server.createMerchant(undefined, url(path))
  return { id: m.id, apiKey: m.apiKey, secret: m.webhookSecret, path }
}

const eventsOf = async (m: Hooked) =>
  (await server.merchant(m.apiKey).call((client) => client.webhooks.listWebhookEvents({ urlParams: { limit: 200 } }))).events

describe("one process, every kind of merchant at once", { timeout: 180_000 }, () => {
  it("live merchants get every event, signed; the sender never restarts; a hanging receiver never sees more than 4 connections", async () => {
    const liveReceivers = await Promise.all(Array.from({ length: 10 }, receiver))
    const failing = await receiver()
    const hanging = await receiver()
    const closedPort = await freePort()

    const live = await Promise.all(liveReceivers.map((r) => merchantAt(r.url, "/ok")))
    const withoutUrl = await Promise.all(Array.from({ length: 8 }, () => merchantAt(() => null, "")))
    const refusing = await merchantAt((path) => `http://127.0.0.1:${closedPort}${path}`, "/refused")
    const erring = await merchantAt(failing.url, "/fail/500")
    const hung = await merchantAt(hanging.url, "/hang")
    const everyone = [...withoutUrl, refusing, erring, hung, ...live]

    // rounds of one deposit per merchant, all merchants at once, so that refusals, failures and
    // timeouts are attempted among the live merchants' attempts throughout
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all(everyone.map((m) => server.deposit(m.id, 10, `mixed-${round}-${randomUUID()}`)))
    }

    const receipts = await Promise.all(live.map(async (m, i) => {
      const got = await pollUntil(`${ROUNDS} events at live receiver ${i}`, async () => {
        const arrived = deliveriesTo(liveReceivers[i]!, m.path)
        return new Set(arrived.map((d) => headerOf(d.headers, "x-event-id"))).size >= ROUNDS ? arrived : undefined
      }, 60_000)
      for (const delivery of got) expect(verdictOf(delivery, m.secret)).toBe("valid")
      // the very events the audit log has, each delivered
      const events = await pollUntil("the live merchant's events recorded delivered", async () => {
        const all = await eventsOf(m)
        return all.length === ROUNDS && all.every((e) => e.delivery_status === "delivered") ? all : undefined
      })
      expect(new Set(got.map((d) => headerOf(d.headers, "x-event-id")))).toEqual(new Set(events.map((e) => e.id)))
      return got
    }))

    // from each event's creation to its arrival; the first arrival of each event counts
    const firstArrival = new Map<string, number>()
    for (const delivery of receipts.flat()) {
      const body = bodyOf(delivery)
      const latency = delivery.receivedAt - Date.parse(body.created_at)
      firstArrival.set(body.event_id, Math.min(firstArrival.get(body.event_id) ?? latency, latency))
    }
    const latencies = [...firstArrival.values()].sort((a, b) => a - b)
    expect(latencies).toHaveLength(10 * ROUNDS)
    // the latency is a figure for bench/webhooks (case 1c), not an assertion: it follows the machine's load
    console.info(`live merchants' events, creation to first receipt: p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms`)

    // the merchants without a URL: every attempt of every event refused (code 0) until the schedule ran out
    for (const m of withoutUrl) {
      const events = await pollUntil("the URL-less merchant's events failed", async () => {
        const all = await eventsOf(m)
        return all.length === ROUNDS && all.every((e) => e.delivery_status === "failed") ? all : undefined
      })
      for (const e of events) expect(e).toMatchObject({ delivery_attempts: 5, last_response_code: 0 })
    }
    expect(deliveriesTo(failing, erring.path).length).toBeGreaterThan(0)

    // the hanging receiver: several rounds of timed-out attempts, never more than 4 connections open
    await pollUntil("three rounds of timed-out attempts", async () => deliveriesTo(hanging, hung.path).length >= 3 * PER_MERCHANT ? true : undefined)
    expect(hanging.maxOpenConnections()).toBeLessThanOrEqual(PER_MERCHANT)
    expect(hanging.maxHung()).toBeLessThanOrEqual(PER_MERCHANT)
    const timedOut = (await eventsOf(hung)).filter((e) => e.delivery_attempts > 0)
    expect(timedOut.length).toBeGreaterThan(0)
    for (const e of timedOut) expect(e.last_response_code).toBe(0)

    // and the sender never stopped
    const fibers = ((await server.admin("/ops/fibers")).json as { fibers: Array<{ name: string; restarts: number }> }).fibers
    const webhookFibers = fibers.filter((f) => f.name.startsWith("webhook-"))
    expect(webhookFibers.map((f) => f.name).sort()).toEqual(["webhook-notifications", "webhook-pacing", "webhook-results", "webhook-sender"])
    expect(webhookFibers.map((f) => [f.name, f.restarts])).toEqual(webhookFibers.map((f) => [f.name, 0]))
    expect(server.output()).not.toContain("supervised fiber stopped")
  })
})
