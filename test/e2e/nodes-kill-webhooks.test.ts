/**
 * Webhooks on two nodes sharing one PostgreSQL while one or the other is killed with SIGKILL at
 * random moments of a burst of deposits: every event reaches its receiver at least once, signed,
 * and events received more than once stay rare (under 1 %: only the attempts a killed node had
 * sent and not yet recorded are sent again, once its leases end).
 */
import { randomUUID } from "node:crypto"
import { afterEach, describe, expect, it } from "vitest"
import { freshDatabase } from "../support/database.js"
import { type TwoNodes, twoNodes } from "../support/nodes.js"
import { type Merchant, pollUntil, PURCHASE_ENV, sleep } from "../support/purchases.js"
import type { RunningServer } from "../support/server.js"
import { bodyOf, headerOf, startReceiver, verdictOf } from "../support/webhooks.js"

/**
 * A 2 s attempt timeout (a loaded machine's local answer never takes that long, so no retry comes
 * of a slow answer) gives a 23 s lease (Schedule.ts `holding`): the longest a killed node's events
 * wait for another node.
 */
const ENV = { ...PURCHASE_ENV, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_TIMEOUT_SECONDS: "2", WEBHOOK_RETRY_SCHEDULE: "0,1,1,1,1,1,1,1,1,1,1,1" }
const EVENTS = 500
const MERCHANTS = 10
const KILLS = 3

const cleanup: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined)
})

interface HookMerchant extends Merchant {
  readonly secret: string
}

/** The merchant's events in the audit log (GET /webhook-events, every page). */
const eventsOf = async (server: RunningServer, m: Merchant) => {
  const all: Array<{ id: string; delivery_status: string }> = []
  let cursor: string | null = null
  do {
    const res: { events: ReadonlyArray<(typeof all)[number]>; next_cursor: string | null } = await server.merchant(m.apiKey).call((client) =>
      client.webhooks.listWebhookEvents({ urlParams: { limit: 200, ...(cursor !== null ? { cursor } : {}) } })
    )
    all.push(...res.events)
    cursor = res.next_cursor
  } while (cursor !== null)
  return all
}

describe.runIf(process.env["DATABASE_URL"])("two nodes on one PostgreSQL (DATABASE_URL only), one killed at random moments", { timeout: 240_000 }, () => {
  it("every event of a burst arrives signed at least once; duplicates stay under 1 %", async () => {
    const receiver = await startReceiver()
    cleanup.push(() => receiver.close())
    const database = await freshDatabase()
    cleanup.push(() => database.drop())
    const nodes: TwoNodes = await twoNodes(database, ENV)
    cleanup.push(() => nodes.killAll())

    const creator = await nodes.anyLive()
    const merchants: Array<HookMerchant> = await Promise.all(Array.from({ length: MERCHANTS }, async (_, i) => {
      const m = await creator.createMerchant(undefined, receiver.url(`/ok/${i}`))
      return { id: m.id, apiKey: m.apiKey, secret: m.webhookSecret }
    }))
    const deposits = Array.from({ length: EVENTS }, (_, i) => ({ merchant: merchants[i % MERCHANTS]!, txId: `nodes-${i}-${randomUUID()}` }))

    // Deposits, paced over some seconds so that the kills fall inside the burst, go to either
    // node; one that meets a dead node is sent again (the same tx_id credits once, one event).
    let next = 0
    let failedCalls = 0
    const depositAll = async () => {
      while (next < deposits.length) {
        const { merchant, txId } = deposits[next++]!
        for (;;) {
          const via = await nodes.anyLive()
          // the typed call resolves on a 201 only
          if (await via.deposit(merchant.id, 10, txId).then(() => true, () => false)) break
          failedCalls += 1
          await sleep(50)
        }
        await sleep(100)
      }
    }
    const generators = Promise.all(Array.from({ length: 4 }, depositAll))

    // Each kill at a random point of the burst (the next past the node's restart), on either node.
    const killed: Array<{ node: number; afterDeposits: number }> = []
    for (let k = 0; k < KILLS; k++) {
      const at = Math.floor(EVENTS * (0.1 + 0.75 * (k + Math.random()) / KILLS))
      await pollUntil(`${at} deposits sent`, async () => next >= at ? true : undefined, 120_000, 10)
      const node = Math.random() < 0.5 ? 0 : 1
      killed.push({ node, afterDeposits: next })
      await nodes.killAndRestart(node)
    }
    await generators

    // every deposit's event received with a valid signature, its X-Event-Id that of its body
    const byTxId = new Map(deposits.map(({ merchant, txId }) => [txId, merchant]))
    const received = await pollUntil(
      "every event received",
      async () => {
        const seen = new Map<string, string>()
        for (const delivery of receiver.deliveries) {
          const body = bodyOf(delivery)
          const merchant = byTxId.get(String(body.data["tx_id"]))
          if (merchant !== undefined && verdictOf(delivery, merchant.secret) === "valid" && headerOf(delivery.headers, "x-event-id") === body.event_id) {
            seen.set(String(body.data["tx_id"]), body.event_id)
          }
        }
        return seen.size === EVENTS ? seen : undefined
      },
      150_000,
      250
    )
    // one event per deposit, each recorded delivered: after that nothing is sent again, and the count is final
    const server = await nodes.anyLive()
    for (const m of merchants) {
      await pollUntil(
        "every event recorded delivered",
        async () => {
          const events = await eventsOf(server, m)
          return events.length === EVENTS / MERCHANTS && events.every((e) => e.delivery_status === "delivered") ? true : undefined
        },
        90_000,
        250
      )
    }
    expect(new Set(received.values()).size).toBe(EVENTS)

    const times = new Map<string, number>()
    for (const delivery of receiver.deliveries) {
      const id = headerOf(delivery.headers, "x-event-id") ?? ""
      times.set(id, (times.get(id) ?? 0) + 1)
    }
    expect(times.size).toBe(EVENTS)
    const duplicated = [...times.values()].filter((n) => n > 1).length
    console.log(
      `webhooks across two nodes: ${EVENTS} events, ${receiver.deliveries.length} deliveries, ${duplicated} events received more than once (${
        (100 * duplicated / EVENTS).toFixed(2)
      } %); kills ${JSON.stringify(killed)}; ${failedCalls} deposit calls failed and were sent again`
    )
    expect(killed).toHaveLength(KILLS)
    expect(duplicated).toBeLessThan(EVENTS / 100)
    await nodes.stopAll()
  })
})
