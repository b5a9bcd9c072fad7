/**
 * Webhook delivery across crashes and processes (CONTRACT 1, 4): a sender killed with SIGKILL
 * loses no event (its leases end and another process sends them), a burst of 1,000 events survives
 * kills at random moments, and two processes on one PostgreSQL share an outbox with no event lost or
 * sent twice.
 */
import { randomUUID } from "node:crypto"
import { afterEach, describe, expect, it } from "vitest"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { type Merchant, pollUntil, PURCHASE_ENV, sleep } from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"
import { bodyOf, deliveriesTo, headerOf, type Receiver, startReceiver, verdictOf } from "../support/webhooks.js"

/**
 * 0.5 s per attempt: a lease of 10 s (Schedule.ts `holding`: 8 rounds of held attempts, then 5 s to
 * record), the wait after each kill. An attempt that times out is retried: 12 attempts a second apart.
 */
const ENV = { ...PURCHASE_ENV, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_TIMEOUT_SECONDS: "0.5", WEBHOOK_RETRY_SCHEDULE: "0,1,1,1,1,1,1,1,1,1,1,1" }

const cleanup: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined)
})

const setting = async () => {
  const receiver = await startReceiver()
  cleanup.push(() => receiver.close())
  const database = await freshDatabase()
  cleanup.push(() => database.drop())
  return { receiver, database }
}
const serve = async (database: FreshDatabase, env: Record<string, string> = ENV) => {
  const server = await startServer({ env, database })
  cleanup.push(() => server.stop("SIGKILL"))
  return server
}

interface HookMerchant extends Merchant {
  readonly secret: string
  readonly path: string
}
const merchantAt = async (server: RunningServer, receiver: Receiver, prefix: string): Promise<HookMerchant> => {
  const path = `${prefix}/${randomUUID()}`
  const m = await server.createMerchant(undefined, receiver.url(path))
  return { id: m.id, apiKey: m.apiKey, secret: m.webhookSecret, path }
}

const eventsOf = async (server: RunningServer, m: Merchant) => {
  const all: Array<{ id: string; delivery_status: string; delivery_attempts: number }> = []
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

describe("a killed sender", { timeout: 120_000 }, () => {
  it("loses nothing: the event it held is sent by the next process once the lease ends", async () => {
    const { receiver, database } = await setting()
    const first = await serve(database)
    const m = await merchantAt(first, receiver, "/hang-once")
    await first.deposit(m.id, 10, `tx-${randomUUID()}`)
    await pollUntil("the attempt open", async () => receiver.hung() === 1 ? true : undefined)
    first.process.kill("SIGKILL")
    await new Promise((resolve) => first.process.once("exit", resolve))
    receiver.releaseHung()

    const second = await serve(database)
    const [event] = await pollUntil("the event delivered", async () => {
      const events = await eventsOf(second, m)
      return events[0]?.delivery_status === "delivered" ? events : undefined
    })
    const got = deliveriesTo(receiver, m.path)
    expect(got).toHaveLength(2)
    expect(got.map((d) => headerOf(d.headers, "x-event-id"))).toEqual([event!.id, event!.id])
    expect(got[1]!.body.equals(got[0]!.body)).toBe(true)
    expect(verdictOf(got[1]!, m.secret)).toBe("valid")
    // the killed attempt was never recorded: one attempt, the one that reached the receiver's 2xx
    expect(event!.delivery_attempts).toBe(1)
  })
})

// (each kill costs a restart and a lease's end, 10 s: a long test on a loaded machine)
describe("a burst of 1,000 events with SIGKILLs at random moments", { timeout: 300_000 }, () => {
  it("every event reaches its receiver at least once with a valid signature", async () => {
    const { receiver, database } = await setting()
    let server = await serve(database)
    const merchants = await Promise.all(Array.from({ length: 10 }, (_, i) => merchantAt(server, receiver, `/ok/${i}`)))
    const txIds = Array.from({ length: 1_000 }, (_, i) => ({ merchant: merchants[i % merchants.length]!, txId: `burst-${i}-${randomUUID()}` }))

    // Deposits (one event each) keep coming while servers are killed: a request that meets a dead
    // server is repeated (the same tx_id credits once) until one answers.
    let next = 0
    const depositAll = async () => {
      while (next < txIds.length) {
        const { merchant, txId } = txIds[next++]!
        for (;;) {
          // the typed call resolves on a 201 only
          const credited = await server.deposit(merchant.id, 10, txId).then(() => true, () => false)
          if (credited) break
          await sleep(50)
        }
      }
    }
    const generators = Promise.all(Array.from({ length: 8 }, depositAll))

    let kills = 0
    for (const pause of [400 + Math.random() * 1_500, 300 + Math.random() * 2_000]) {
      await sleep(pause)
      server.process.kill("SIGKILL")
      await new Promise((resolve) => server.process.once("exit", resolve))
      kills += 1
      server = await serve(database)
    }
    await generators
    expect(kills).toBe(2)

    const byTxId = new Map(txIds.map(({ merchant, txId }) => [txId, merchant]))
    const verified = await pollUntil(
      "every event delivered",
      async () => {
        const seen = new Set<string>()
        for (const delivery of receiver.deliveries) {
          const body = bodyOf(delivery)
          const txId = body.data["tx_id"] as string
          const merchant = byTxId.get(txId)
          if (merchant !== undefined && verdictOf(delivery, merchant.secret) === "valid" && headerOf(delivery.headers, "x-event-id") === body.event_id) {
            seen.add(txId)
          }
        }
        return seen.size === txIds.length ? seen : undefined
      },
      180_000,
      250
    )
    expect(verified.size).toBe(1_000)
    // and the audit log agrees: every event delivered, one event per deposit. The receiver may have
    // had an attempt whose result is not recorded yet: its sender records it a moment later, or was
    // killed first, and then the event is sent again once its lease (10 s) ends
    for (const m of merchants) {
      const events = await pollUntil(
        "every event recorded delivered",
        async () => {
          const all = await eventsOf(server, m)
          return all.length === 100 && all.every((e) => e.delivery_status === "delivered")
            ? all
            : undefined
        },
        60_000,
        250
      ).catch(async (error) => {
        const all = await eventsOf(server, m)
        throw new Error(`${String(error)}: ${all.length} events, ${JSON.stringify(all.filter((e) => e.delivery_status !== "delivered"))}`)
      })
      expect(events).toHaveLength(100)
    }
  })
})

describe.runIf(process.env["DATABASE_URL"])("two processes on one PostgreSQL", { timeout: 180_000 }, () => {
  it("share the outbox: every event delivered exactly once in the normal path", async () => {
    const { receiver, database } = await setting()
    // the normal path: no attempt times out, however slow the machine (the crash tests' 0.5 s
    // timeout made a loaded machine's slow answers into retries, delivered twice)
    const normal = { ...ENV, WEBHOOK_TIMEOUT_SECONDS: "10" }
    const [a, b] = [await serve(database, normal), await serve(database, normal)]
    const merchants = await Promise.all(Array.from({ length: 5 }, (_, i) => merchantAt(a, receiver, `/ok/${i}`)))
    const n = 300
    await Promise.all(Array.from({ length: 6 }, async (_, worker) => {
      for (let i = worker; i < n; i += 6) {
        const via = i % 2 === 0 ? a : b
        await via.deposit(merchants[i % merchants.length]!.id, 10, `two-${i}-${randomUUID()}`)
      }
    }))
    await pollUntil("every event delivered", async () => receiver.deliveries.length >= n ? true : undefined, 120_000, 100)
    // nothing more arrives: wait until every event is recorded delivered, then count
    for (const m of merchants) {
      await pollUntil("delivered", async () => (await eventsOf(a, m)).every((e) => e.delivery_status === "delivered") ? true : undefined)
    }
    const ids = receiver.deliveries.map((d) => headerOf(d.headers, "x-event-id"))
    expect(ids).toHaveLength(n)
    expect(new Set(ids).size).toBe(n)
    // one attempt each, whichever process made it
    const attempts = await Promise.all([a, b].map(async (s) => {
      const text = await fetch(`${s.opsUrl}/metrics`).then((r) => r.text())
      return Number(text.match(/^webhook_attempts_total\{outcome="2xx"\} (\d+)/m)?.[1] ?? 0)
    }))
    expect(attempts[0]! + attempts[1]!).toBe(n)
  })
})
