/**
 * The loop that starts webhook attempts (AttemptQueue.ts) with real attempts over real sockets:
 * merchants whose attempts are refused before any byte (no URL, a scheme that is not http(s), user
 * info in the URL) end inside their own start, in the middle of the loop, mixed with merchants
 * whose receiver answers. The loop must not re-enter itself, must give every refused merchant's
 * slots back at once (all its events are attempted in the same call), and must keep the limits.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HeldEvent, makeAttemptQueue } from "../../src/Webhooks/AttemptQueue.js"
import type { ClaimedEvent } from "../../src/Webhooks/Deliveries.js"
import { makeDelivery, type Outcome } from "../../src/Webhooks/Delivery.js"
import type { Resolve } from "../../src/Webhooks/Targets.js"
import { pollUntil } from "../support/purchases.js"
import { deliveriesTo, headerOf, type Receiver, startReceiver, verdictOf } from "../support/webhooks.js"

let receiver: Receiver
beforeAll(async () => {
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver.close()
})

const toLoopback: Resolve = async () => [{ address: "127.0.0.1", family: 4 }]

const PER_MERCHANT = 4
const EVENTS_EACH = 8

const eventsOf = (merchantId: string, webhookUrl: string | null): Array<ClaimedEvent> =>
  Array.from({ length: EVENTS_EACH }, () => {
    const id = crypto.randomUUID()
    return {
      id,
      merchantId,
      eventType: "balance.deposited",
      body: JSON.stringify({ event_id: id, event_type: "balance.deposited", data: { merchant_id: merchantId } }),
      createdAt: new Date(),
      runAttempts: 0,
      webhookUrl,
      secret: `whsec_${merchantId}`,
      previousSecret: null,
      claimToken: crypto.randomUUID()
    }
  })

describe("starting attempts", () => {
  // (64 in all: more than the live merchants can take, as with the default WEBHOOK_CONCURRENCY; 16: fewer)
  it.each([64, 16])(
    "attempts that end inside their start (refused merchants beside live ones, one claim, %i in all) never re-enter the loop, and free their slots at once",
    async (total) => {
      const delivery = makeDelivery({ timeoutMs: 10_000, allowPrivateTargets: true, resolve: toLoopback })
      const port = new URL(receiver.url("/")).port
      const refusedUrls = [null, null, null, null, "ftp://example.com/hook", `http://user:secret@127.0.0.1:${port}/ok/creds`]
      const refused = Array.from({ length: 18 }, (_, i) => ({ id: crypto.randomUUID(), url: refusedUrls[i % refusedUrls.length]! }))
      const live = Array.from({ length: 10 }, () => {
        const id = crypto.randomUUID()
        return { id, url: receiver.url(`/ok/${id}`) }
      })
      // one claim's events, the merchants interleaved: refused, live, refused, ...
      const byMerchant = [...refused, ...live].map((m) => eventsOf(m.id, m.url))
      const claimed = Array.from({ length: EVENTS_EACH }, (_, i) => byMerchant.map((events) => events[i]!)).flat()

      const outcomes = new Map<string, Outcome>()
      const running = new Map<string, number>()
      let runningTotal = 0
      let mostPerMerchant = 0
      let mostInAll = 0
      const queue = makeAttemptQueue({
        perMerchant: PER_MERCHANT,
        total,
        leaseNeededMs: 0,
        mayStart: () => true,
        start: (event: HeldEvent) => {
          running.set(event.merchantId, (running.get(event.merchantId) ?? 0) + 1)
          runningTotal += 1
          mostPerMerchant = Math.max(mostPerMerchant, running.get(event.merchantId)!)
          mostInAll = Math.max(mostInAll, runningTotal)
          delivery.send(
            { url: event.webhookUrl, eventId: event.id, eventType: event.eventType, body: event.body, secret: event.secret, previousSecret: null },
            (outcome) => {
              outcomes.set(event.id, outcome)
              running.set(event.merchantId, running.get(event.merchantId)! - 1)
              runningTotal -= 1
              queue.ended(event.merchantId)
            }
          )
        }
      })
      try {
        queue.add(claimed, Date.now() + 60_000)
        // every refused event was attempted within that one call: each refusal gave its slot back at once
        const refusedEvents = byMerchant.slice(0, refused.length).flat()
        expect(refusedEvents.map((e) => outcomes.get(e.id)?.kind)).toEqual(refusedEvents.map(() => "pre-flight"))
        expect(refused.map((m) => queue.inFlightOf(m.id))).toEqual(refused.map(() => 0))

        await pollUntil("every attempt ended", async () => outcomes.size === claimed.length ? true : undefined, 60_000)
        const liveEvents = byMerchant.slice(refused.length).flat()
        expect(liveEvents.map((e) => outcomes.get(e.id)?.kind)).toEqual(liveEvents.map(() => "2xx"))
        for (const m of live) {
          const got = deliveriesTo(receiver, `/ok/${m.id}`)
          expect(got).toHaveLength(EVENTS_EACH)
          for (const d of got) expect(verdictOf(d, `whsec_${m.id}`)).toBe("valid")
          expect(new Set(got.map((d) => headerOf(d.headers, "x-event-id"))).size).toBe(EVENTS_EACH)
        }
        // nothing reached a receiver for the refused merchants (user info is never sent)
        expect(deliveriesTo(receiver, "/ok/creds")).toEqual([])
        expect(mostPerMerchant).toBeLessThanOrEqual(PER_MERCHANT)
        expect(mostInAll).toBeLessThanOrEqual(total)
        expect(queue.inFlightTotal()).toBe(0)
        expect(queue.unfinished().total).toBe(0)
      } finally {
        await Effect.runPromise(delivery.close)
      }
    }
  )

  it("gives back unattempted an event whose lease ends too soon for an attempt, and keeps the rest", async () => {
    const started: Array<string> = []
    const queue = makeAttemptQueue({
      perMerchant: PER_MERCHANT,
      total: 64,
      leaseNeededMs: 5_000,
      mayStart: () => true,
      start: (event) => {
        started.push(event.id)
        queue.ended(event.merchantId)
      }
    })
    const soon = eventsOf(crypto.randomUUID(), null)
    const later = eventsOf(crypto.randomUUID(), null)
    queue.add(soon, Date.now() + 1_000)
    queue.add(later, Date.now() + 60_000)
    expect(started.sort()).toEqual(later.map((e) => e.id).sort())
    expect(queue.takeGivenBack().map((e) => e.id).sort()).toEqual(soon.map((e) => e.id).sort())
    expect(queue.takeGivenBack()).toEqual([])
    expect(queue.heldEvents().map((e) => e.id).sort()).toEqual(later.map((e) => e.id).sort())
  })

  it("while paced, takes the merchants in turn: one whose start the budget ran out on keeps its turn for the next tick", () => {
    let budget = 0
    const started: Array<string> = []
    const queue = makeAttemptQueue({
      perMerchant: PER_MERCHANT,
      total: 64,
      leaseNeededMs: 0,
      mayStart: () => budget-- > 0,
      start: (event) => started.push(event.merchantId)
    })
    const [a, b, c] = ["a", "b", "c"]
    queue.add([...eventsOf(a!, null), ...eventsOf(b!, null), ...eventsOf(c!, null)], Date.now() + 60_000)
    for (let tick = 0; tick < 3; tick++) {
      budget = 2
      queue.dispatch()
    }
    expect(started).toEqual([a, a, b, b, c, c])
  })
})
