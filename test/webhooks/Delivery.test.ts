/**
 * One delivery attempt over real sockets (spec 6, CONTRACT 4): what is sent, how every kind of
 * receiver answer is classified, and pre-flight refusals that never open a connection. Names are
 * resolved by a hook (no test resolves a real outside name).
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeDelivery, type Outcome, USER_AGENT } from "../../src/Webhooks/Delivery.js"
import { sign } from "../../src/Webhooks/Signature.js"
import type { Resolve } from "../../src/Webhooks/Targets.js"
import { deliveriesTo, headerOf, type Receiver, startReceiver } from "../support/webhooks.js"

let receiver: Receiver
beforeAll(async () => {
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver.close()
})

/** Every name resolves to the receiver's loopback address. */
const toLoopback: Resolve = async () => [{ address: "127.0.0.1", family: 4 }]

const input = (url: string | null) => ({
  url,
  eventId: "3f1b6f0e-4a53-4c43-9d0a-8f1f2f0f9a11",
  eventType: "purchase.completed",
  body: "{\"event_id\":\"3f1b6f0e-4a53-4c43-9d0a-8f1f2f0f9a11\",\"event_type\":\"purchase.completed\",\"data\":{\"price\":1.5,\"name\":\"★ Karambit\"}}",
  secret: "whsec_current",
  previousSecret: null as string | null
})

const attempt = (url: string | null, options: { allowPrivate?: boolean; timeoutMs?: number; previousSecret?: string } = {}): Promise<Outcome> => {
  const delivery = makeDelivery({ timeoutMs: options.timeoutMs ?? 2_000, allowPrivateTargets: options.allowPrivate ?? true, resolve: toLoopback })
  return Effect.runPromise(delivery.attempt({ ...input(url), previousSecret: options.previousSecret ?? null }).pipe(Effect.ensuring(delivery.close)))
}

describe("an attempt", () => {
  it("POSTs the body byte for byte with every header, signed over timestamp.body; the previous secret signs X-Signature-Previous", async () => {
    const before = Math.floor(Date.now() / 1000)
    expect(await attempt(receiver.url("/ok/headers"), { previousSecret: "whsec_old" })).toMatchObject({ kind: "2xx", status: 200 })
    const [got] = deliveriesTo(receiver, "/ok/headers")
    const sent = input(null)
    expect(got!.body.equals(Buffer.from(sent.body, "utf8"))).toBe(true)
    const timestamp = headerOf(got!.headers, "x-timestamp")!
    expect(timestamp).toMatch(/^\d+$/)
    expect(Number(timestamp)).toBeGreaterThanOrEqual(before)
    expect(got!.headers).toMatchObject({
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(sent.body)),
      "user-agent": USER_AGENT,
      "x-event-id": sent.eventId,
      "x-event": sent.eventType,
      "x-signature": sign("whsec_current", timestamp, sent.body),
      "x-signature-previous": sign("whsec_old", timestamp, sent.body)
    })
    expect(headerOf(got!.headers, "x-signature")).toMatch(/^[0-9a-f]{64}$/)
  })

  it("sends no X-Signature-Previous without a previous secret", async () => {
    await attempt(receiver.url("/ok/no-previous"))
    expect(deliveriesTo(receiver, "/ok/no-previous")[0]!.headers["x-signature-previous"]).toBeUndefined()
  })

  it("classifies each answer: 2xx even when slow within the timeout, 4xx, 5xx, a redirect not followed, a timeout, a reset", async () => {
    expect(await attempt(receiver.url("/slow/300"), { timeoutMs: 3_000 })).toMatchObject({ kind: "2xx", status: 200 })
    expect(await attempt(receiver.url("/fail/410"))).toMatchObject({ kind: "4xx", status: 410 })
    expect(await attempt(receiver.url("/fail/500"))).toMatchObject({ kind: "5xx", status: 500 })
    expect(await attempt(receiver.url("/redirect"))).toMatchObject({ kind: "3xx", status: 302 })
    expect(deliveriesTo(receiver, "/ok/redirected")).toEqual([])
    expect(await attempt(receiver.url("/hang/one"), { timeoutMs: 300 })).toMatchObject({ kind: "timeout", status: 0 })
    expect(await attempt(receiver.url("/slow/2000"), { timeoutMs: 300 })).toMatchObject({ kind: "timeout", status: 0 })
    expect(await attempt(receiver.url("/reset"))).toMatchObject({ kind: "transport", status: 0 })
    expect(await attempt("http://127.0.0.1:1/closed-port")).toMatchObject({ kind: "transport", status: 0 })
  })
})

describe("a timed-out attempt", () => {
  it("ends only once its connection is closed: 4 chains of attempts to a hanging receiver never hold more than 4 connections there", async () => {
    const hanging = await startReceiver()
    const delivery = makeDelivery({ timeoutMs: 1_000, allowPrivateTargets: true, resolve: toLoopback })
    try {
      // as the sender does: each chain starts its next attempt as soon as `done` gives its slot back
      const chain = (left: number, outcomes: Array<Outcome>): Promise<Array<Outcome>> =>
        left === 0 ? Promise.resolve(outcomes) : new Promise((resolve) => {
          delivery.send({ ...input(hanging.url(`/hang/${left}`)) }, (outcome) => resolve(chain(left - 1, [...outcomes, outcome])))
        })
      const outcomes = (await Promise.all([1, 2, 3, 4].map(() => chain(3, [])))).flat()
      expect(outcomes.map((o) => o.kind)).toEqual(Array(12).fill("timeout"))
      expect(hanging.deliveries).toHaveLength(12)
      expect(hanging.maxOpenConnections()).toBeLessThanOrEqual(4)
    } finally {
      await Effect.runPromise(delivery.close)
      await hanging.close()
    }
  })
})

describe("pre-flight", () => {
  it("refuses localhost, a name resolving to 127.0.0.1, [::1], ::ffff:127.0.0.1, 169.254.169.254 and 10.0.0.1 without opening a connection", async () => {
    const port = new URL(receiver.url("/")).port
    const connectionsBefore = receiver.connections()
    const deliveriesBefore = receiver.deliveries.length
    const targets = [
      `http://localhost:${port}/ok`,
      `http://hooks.rebinding.test:${port}/ok`,
      `http://[::1]:${port}/ok`,
      `http://[::ffff:127.0.0.1]:${port}/ok`,
      "http://169.254.169.254/latest/meta-data/",
      "http://10.0.0.1/hook",
      "ftp://example.com/hook",
      null
    ]
    for (const url of targets) {
      expect(await attempt(url, { allowPrivate: false }), String(url)).toMatchObject({ kind: "pre-flight", status: 0 })
    }
    expect(receiver.connections()).toBe(connectionsBefore)
    expect(receiver.deliveries.length).toBe(deliveriesBefore)
  })

  it("with private targets allowed, a name resolving to loopback is delivered to", async () => {
    const url = receiver.url("/ok/allowed").replace("127.0.0.1", "hooks.local.test")
    expect(await attempt(url, { allowPrivate: true })).toMatchObject({ kind: "2xx" })
  })
})
