/**
 * Webhook delivery end to end (spec 2.11, 3.3, 4.5, 6; CONTRACT 4): the real service's sender posts
 * to a local receiver over real sockets. Signatures and headers, every kind of receiver answer, the
 * retry schedule ending in `failed`, replay and recovery keeping event ids and bytes, secret
 * rotation with overlap, events of a merchant without a URL, and bad admin input.
 */
import { Either } from "effect"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { WebhookSecretIssued } from "../../src/Ops/AdminApi.js"
import { bodyOf as decodedBody, codeOf } from "../support/expectations.js"
import { bought, buyBody, fund, loadItem, pollUntil, PURCHASE_ENV } from "../support/purchases.js"
import { metricValue, type RunningServer, startServer } from "../support/server.js"
import { depositTo, eventsOf, merchantAt, settledEvent } from "../support/webhook-events.js"
import { awaitDeliveries, bodyOf, deliveriesTo, headerOf, type Receiver, startReceiver, verdictOf } from "../support/webhooks.js"

/** Three attempts, 0.2 s apart; 1 s per attempt. */
const ENV = {
  ...PURCHASE_ENV,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_SCHEDULE: "0,0.2,0.2",
  WEBHOOK_TIMEOUT_SECONDS: "1"
}

let server: RunningServer
let receiver: Receiver
beforeAll(async () => {
  receiver = await startReceiver()
  server = await startServer({ env: ENV })
})
afterAll(async () => {
  await server?.stop()
  await receiver?.close()
})

describe("delivery", () => {
  it("a credited deposit's balance.deposited arrives signed, with every header; the audit log shows it delivered at the 2xx", async () => {
    const m = await merchantAt(server, receiver, "/ok")
    const txId = await depositTo(server, m, 102.5)
    const [delivery] = await awaitDeliveries(receiver, m.path, 1)
    const body = bodyOf(delivery!)
    expect(body).toMatchObject({
      event_type: "balance.deposited",
      data: { amount: 101.47, currency: "USD", network: "tron", tx_id: txId, balance_after: 101.47 }
    })
    expect(verdictOf(delivery!, m.webhookSecret)).toBe("valid")
    expect(verdictOf(delivery!, "whsec_someone_else")).toBe("bad-signature")
    expect(delivery!.headers).toMatchObject({
      "content-type": "application/json",
      "x-event-id": body.event_id,
      "x-event": "balance.deposited"
    })
    expect(headerOf(delivery!.headers, "user-agent")).toMatch(/merchant-purchasing-service/)
    expect(headerOf(delivery!.headers, "x-signature")).toMatch(/^[0-9a-f]{64}$/)
    expect(Math.abs(Number(headerOf(delivery!.headers, "x-timestamp")) - Date.now() / 1000)).toBeLessThan(300)
    expect(delivery!.headers["x-signature-previous"]).toBeUndefined()
    const event = await settledEvent(server, m)
    expect(event).toMatchObject({
      id: body.event_id,
      event_type: "balance.deposited",
      order_id: null,
      delivery_status: "delivered",
      delivery_attempts: 1,
      last_response_code: 200
    })
    expect(Date.parse(event.delivered_at!)).toBeGreaterThanOrEqual(Date.parse(event.created_at))
  })

  it("a purchase's events all arrive, each signed, its X-Event equal to its type and X-Event-Id to its event_id", async () => {
    const m = await merchantAt(server, receiver, "/ok")
    await fund(server, m, 1_000)
    const itemId = await loadItem(server, 150)
    const created = await bought(server, m, buyBody({ itemId, maxPrice: 5 }))
    const types = ["purchase.created", "purchase.processing", "purchase.sent_to_steam", "purchase.completed"]
    const deliveries = await pollUntil("the purchase's four events", async () => {
      const got = deliveriesTo(receiver, m.path).filter((d) => bodyOf(d).event_type.startsWith("purchase."))
      return types.every((t) => got.some((d) => bodyOf(d).event_type === t)) ? got : undefined
    })
    for (const delivery of deliveries) {
      const body = bodyOf(delivery)
      expect(verdictOf(delivery, m.webhookSecret)).toBe("valid")
      expect([headerOf(delivery.headers, "x-event"), headerOf(delivery.headers, "x-event-id")]).toEqual([body.event_type, body.event_id])
      expect(body.data).toMatchObject({ purchase_id: created.purchase_id, custom_id: created.custom_id, price: 1.5 })
    }
    const events = await eventsOf(server, m, { order_id: created.purchase_id })
    expect(new Set(deliveries.map((d) => bodyOf(d).event_id))).toEqual(new Set(events.map((e) => e.id)))
  })

  it("a receiver that answers 500 gets every attempt of the schedule with the same bytes, then the event is failed", async () => {
    const m = await merchantAt(server, receiver, "/fail/500")
    await depositTo(server, m)
    const event = await settledEvent(server, m)
    expect(event).toMatchObject({ delivery_status: "failed", delivery_attempts: 3, last_response_code: 500, delivered_at: null })
    const attempts = deliveriesTo(receiver, m.path)
    expect(attempts).toHaveLength(3)
    expect(new Set(attempts.map((a) => a.body.toString("hex"))).size).toBe(1)
    expect(new Set(attempts.map((a) => headerOf(a.headers, "x-event-id")))).toEqual(new Set([event.id]))
    // the schedule's 0.2 s between attempts (a lower bound: a loaded machine may take longer)
    expect(attempts[1]!.receivedAt - attempts[0]!.receivedAt).toBeGreaterThanOrEqual(150)
    expect(attempts[2]!.receivedAt - attempts[1]!.receivedAt).toBeGreaterThanOrEqual(150)
    for (const attempt of attempts) expect(verdictOf(attempt, m.webhookSecret)).toBe("valid")
  })

  it("a receiver that hangs past the timeout, resets the connection or redirects: 0, 0 and 302, failed; the redirect is not followed", async () => {
    const cases = [["/hang", 0], ["/reset", 0], ["/redirect", 302]] as const
    const merchants = await Promise.all(cases.map(async ([path]) => merchantAt(server, receiver, path)))
    await Promise.all(merchants.map((m) => depositTo(server, m)))
    for (const [i, [path, code]] of cases.entries()) {
      const event = await settledEvent(server, merchants[i]!)
      expect([path, event.delivery_status, event.delivery_attempts, event.last_response_code]).toEqual([path, "failed", 3, code])
    }
    expect(deliveriesTo(receiver, "/ok/redirected")).toEqual([])
    receiver.releaseHung()
  })

  it("a 2xx that comes slowly but within the timeout is a delivery", async () => {
    const m = await merchantAt(server, receiver, "/slow/300")
    await depositTo(server, m)
    expect(await settledEvent(server, m)).toMatchObject({ delivery_status: "delivered", delivery_attempts: 1, last_response_code: 200 })
  })

  it("a merchant without a webhook URL has its events recorded, refused before any byte (0) and failed after the schedule", async () => {
    const m = await merchantAt(server, receiver, null)
    await depositTo(server, m)
    expect(await settledEvent(server, m)).toMatchObject({ delivery_status: "failed", delivery_attempts: 3, last_response_code: 0 })
  })
})

describe("support procedures", () => {
  it("replay sends a failed event again with the same event_id and bytes; delivery_attempts grows; a delivered one can be replayed too", async () => {
    const m = await merchantAt(server, receiver, "/fail/503")
    await depositTo(server, m)
    const failed = await settledEvent(server, m)
    expect(failed.delivery_status).toBe("failed")
    const original = deliveriesTo(receiver, m.path)[0]!
    // the merchant fixes its receiver
    const okPath = `/ok/${randomUUID()}`
    await server.adminApi.call((client) => client.merchants.updateMerchant({ path: { id: m.id }, payload: { webhook_url: receiver.url(okPath) } }))
    const replay = await server.adminApi.call((client) => client.webhooks.replayEvent({ path: { id: failed.id } }))
    expect(replay.event_id).toEqual(failed.id)
    const [again] = await awaitDeliveries(receiver, okPath, 1)
    expect(again!.body.equals(original.body)).toBe(true)
    expect(headerOf(again!.headers, "x-event-id")).toBe(failed.id)
    expect(verdictOf(again!, m.webhookSecret)).toBe("valid")
    const delivered = await settledEvent(server, m, failed.id)
    expect(delivered).toMatchObject({ id: failed.id, delivery_status: "delivered", delivery_attempts: 4, last_response_code: 200 })
    // a delivered event replayed: delivered again, one more attempt
    await server.adminApi.call((client) => client.webhooks.replayEvent({ path: { id: failed.id } }))
    await awaitDeliveries(receiver, okPath, 2)
    await pollUntil("the fifth attempt recorded", async () => (await settledEvent(server, m, failed.id)).delivery_attempts === 5 ? true : undefined)
  })

  it("replay of an unknown or malformed id is 404 ADMIN_NOT_FOUND and changes nothing", async () => {
    for (const id of [randomUUID(), "not-a-uuid", "00000000-0000-0000-0000-000000000000"]) {
      const res = await server.admin(`/admin/webhook-events/${id}/replay`, { method: "POST" })
      expect([id, res.status, codeOf(res)]).toEqual([id, 404, "ADMIN_NOT_FOUND"])
    }
  })

  it("recover requeues the merchant's failed events created since the time given, keeping their ids; older ones stay failed", async () => {
    const m = await merchantAt(server, receiver, "/fail/500")
    await depositTo(server, m)
    const old = await settledEvent(server, m)
    await new Promise((r) => setTimeout(r, 50))
    const since = new Date().toISOString()
    await depositTo(server, m)
    await depositTo(server, m)
    const failedSince = await pollUntil("two more failed events", async () => {
      const events = (await eventsOf(server, m, { status: "failed" })).filter((e) => e.id !== old.id)
      return events.length === 2 ? events : undefined
    })
    const okPath = `/ok/${randomUUID()}`
    await server.adminApi.call((client) => client.merchants.updateMerchant({ path: { id: m.id }, payload: { webhook_url: receiver.url(okPath) } }))
    const res = await server.adminApi.call((client) => client.webhooks.recoverEvents({ path: { id: m.id }, payload: { since } }))
    expect(res).toEqual({ requeued: 2 })
    const redelivered = await awaitDeliveries(receiver, okPath, 2)
    expect(new Set(redelivered.map((d) => headerOf(d.headers, "x-event-id")))).toEqual(new Set(failedSince.map((e) => e.id)))
    for (const e of failedSince) expect(await settledEvent(server, m, e.id)).toMatchObject({ delivery_status: "delivered", delivery_attempts: 4 })
    expect((await eventsOf(server, m)).find((e) => e.id === old.id)).toMatchObject({ delivery_status: "failed", delivery_attempts: 3 })
  })

  it("recover with a bad body or an unknown merchant is 400 or 404 and requeues nothing", async () => {
    const m = await merchantAt(server, receiver, "/fail/500")
    await depositTo(server, m)
    await settledEvent(server, m)
    for (const body of [{}, { since: "yesterday" }, { since: "2026-01-01" }, { since: 5 }, { since: "2026-02-30T00:00:00Z" }]) {
      const res = await server.admin(`/admin/merchants/${m.id}/webhook-events/recover`, { method: "POST", body })
      expect([JSON.stringify(body), res.status, codeOf(res)]).toEqual([JSON.stringify(body), 400, "ADMIN_INVALID_REQUEST"])
    }
    const unknown = await server.adminApi.attempt((client) =>
      client.webhooks.recoverEvents({ path: { id: randomUUID() }, payload: { since: "2020-01-01T00:00:00Z" } })
    )
    // the typed error of the wire's {"error": {"code": "ADMIN_NOT_FOUND"}} (its decoding requires that code)
    expect(Either.isLeft(unknown) ? unknown.left._tag : unknown).toBe("AdminNotFound")
    expect((await eventsOf(server, m))[0]).toMatchObject({ delivery_status: "failed", delivery_attempts: 3 })
  })
})

describe("secret rotation", () => {
  it("with an overlap, deliveries carry X-Signature (new secret) and X-Signature-Previous (old); a rotation with 0 ends the overlap", async () => {
    const m = await merchantAt(server, receiver, "/ok")
    // raw: the endpoint declares no body (the handler reads the optional one), so the typed client cannot send it
    const rotate = async () => {
      const res = await server.admin(`/admin/merchants/${m.id}/webhook-secret`, { method: "POST", body: { previous_valid_seconds: 600 } })
      expect(res.status, res.text).toBe(201)
      return decodedBody(res, WebhookSecretIssued).webhook_secret
    }
    const secret2 = await rotate()
    expect(secret2).not.toBe(m.webhookSecret)
    await depositTo(server, m)
    const [first] = await awaitDeliveries(receiver, m.path, 1)
    expect(verdictOf(first!, secret2)).toBe("valid")
    expect(verdictOf(first!, m.webhookSecret, "x-signature-previous")).toBe("valid")
    expect(verdictOf(first!, m.webhookSecret)).toBe("bad-signature")

    // only the immediate predecessor overlaps: a second rotation with overlap signs with secret2 as the previous
    const secret3 = await rotate()
    await depositTo(server, m)
    const [, second] = await awaitDeliveries(receiver, m.path, 2)
    expect(verdictOf(second!, secret3)).toBe("valid")
    expect(verdictOf(second!, secret2, "x-signature-previous")).toBe("valid")

    // no body: the old secret ends at once
    const fourth = await server.adminApi.call((client) => client.merchants.rotateWebhookSecret({ path: { id: m.id } }))
    await depositTo(server, m)
    const [, , last] = await awaitDeliveries(receiver, m.path, 3)
    expect(verdictOf(last!, fourth.webhook_secret)).toBe("valid")
    expect(last!.headers["x-signature-previous"]).toBeUndefined()
  })

  it("a bad previous_valid_seconds is 400 ADMIN_INVALID_REQUEST and the secret is unchanged", async () => {
    const m = await merchantAt(server, receiver, "/ok")
    for (
      const body of [{ previous_valid_seconds: -1 }, { previous_valid_seconds: 604_801 }, { previous_valid_seconds: 1.5 }, { previous_valid_seconds: "60" }]
    ) {
      const res = await server.admin(`/admin/merchants/${m.id}/webhook-secret`, { method: "POST", body })
      expect([JSON.stringify(body), res.status, codeOf(res)]).toEqual([JSON.stringify(body), 400, "ADMIN_INVALID_REQUEST"])
    }
    await depositTo(server, m)
    const [delivery] = await awaitDeliveries(receiver, m.path, 1)
    expect(verdictOf(delivery!, m.webhookSecret)).toBe("valid")
  })
})

describe("observability", () => {
  it("/metrics counts attempts by outcome and has the backlog gauges; /ops/fibers lists the sender's fibers", async () => {
    expect(await metricValue(server, "webhook_attempts_total{outcome=\"2xx\"}")).toBeGreaterThan(0)
    expect(await metricValue(server, "webhook_attempts_total{outcome=\"5xx\"}")).toBeGreaterThan(0)
    expect(await metricValue(server, "webhook_attempts_total{outcome=\"pre-flight\"}")).toBeGreaterThan(0)
    expect(await metricValue(server, "webhook_delivery_latency_seconds_count")).toBeGreaterThan(0)
    const text = await fetch(`${server.opsUrl}/metrics`).then((r) => r.text())
    expect(text).toMatch(/^webhook_due_backlog \d+$/m)
    expect(text).toMatch(/^webhook_oldest_due_age_seconds [\d.]+$/m)
    const fibers = ((await fetch(`${server.opsUrl}/ops/fibers`).then((r) => r.json())) as { fibers: Array<{ name: string; state: string }> }).fibers
    for (const name of ["webhook-sender", "webhook-results", "webhook-notifications"]) {
      expect(fibers.find((f) => f.name === name)?.state, name).toBe("running")
    }
  })
})

describe("the schedule's first value", () => {
  let delayed: RunningServer
  beforeAll(async () => {
    delayed = await startServer({ env: { ...ENV, WEBHOOK_RETRY_SCHEDULE: "1.5,0.2" } })
  })
  afterAll(async () => {
    await delayed?.stop()
  })

  it("is the wait before an event's first attempt", async () => {
    const path = `/ok/${randomUUID()}`
    const m = await delayed.createMerchant(undefined, receiver.url(path))
    await delayed.deposit(m.id, 10, `tx-${randomUUID()}`)
    const [delivery] = await awaitDeliveries(receiver, path, 1)
    const created = Date.parse(bodyOf(delivery!).created_at)
    expect(delivery!.receivedAt - created).toBeGreaterThanOrEqual(1_400)
  })
})
