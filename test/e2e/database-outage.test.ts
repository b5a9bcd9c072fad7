/**
 * The service survives its database dropping every connection (a PostgreSQL restart, a failover,
 * `pg_terminate_backend`): two processes on one PostgreSQL, reached through a proxy that cuts every
 * connection at once (test/support/pg-proxy.ts), under writes on every path (buys of all three
 * kinds with their repeats, deposits, catalogue PUTs), webhook deliveries and feed clients. Once
 * the database is back each process recovers by itself: `/ready` says 503 while it is out of reach
 * and 200 after, and nothing is lost, done twice, half-done or created: each purchase once, the
 * balance identity, every event delivered, the feed gapless and equal to the catalogue.
 * PostgreSQL only: on PGlite the database lives inside the process.
 */
import { randomUUID } from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { applyChanges, availableDump, eventually, type Item, metric, rawGet, simpleItem } from "../support/catalogue.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { FeedFollower, ReadyWatch, type Sent, Traffic } from "../support/outage.js"
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js"
import { cents, fund, itemOf, listPurchases, loadItems, type Merchant, pollUntil, PURCHASE_ENV, settledBalanceOf, sleep } from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"
import { headerOf, type Receiver, startReceiver } from "../support/webhooks.js"

const ENV = {
  ...PURCHASE_ENV,
  DUMP_INTERVAL_SECONDS: "1",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_TIMEOUT_SECONDS: "2",
  WEBHOOK_RETRY_SCHEDULE: "0,1,1,1,1,1,1,1,1,1,1,1"
}
const CHANNELS = ["catalogue_changes", "purchase_changed", "merchant_auth_changed", "webhook_events_due"]

describe.runIf(!!process.env["DATABASE_URL"])("every database connection cut, on two processes (DATABASE_URL only)", { timeout: 180_000 }, () => {
  let receiver: Receiver
  let database: FreshDatabase
  let proxy: PgProxy
  let a: RunningServer
  let b: RunningServer
  let merchants: Array<Merchant & { readonly path: string }>

  beforeAll(async () => {
    receiver = await startReceiver()
    database = await freshDatabase()
    const server = new URL(process.env["DATABASE_URL"]!)
    proxy = await startPgProxy({ host: server.hostname, port: Number(server.port || 5432) })
    const through: FreshDatabase = { ...database, url: proxy.urlFor(database.url!) }
    // the cuts are this file's own faults: the restarts they cause (at WARN) are expected, nothing else
    const expectedErrors = [/supervised fiber lost its database connection/]
    a = await startServer({ database: through, env: ENV, expectedErrors })
    b = await startServer({ database: through, env: ENV, expectedErrors })
    merchants = await Promise.all(Array.from({ length: 3 }, async (_, i) => {
      const path = `/ok/${i}/${randomUUID()}`
      const m = await a.createMerchant(undefined, receiver.url(path))
      await fund(a, m, FUNDED)
      return { id: m.id, apiKey: m.apiKey, path }
    }))
  })
  afterAll(async () => {
    await a?.stop()
    await b?.stop()
    await proxy?.close()
    await database?.drop()
    await receiver?.close()
  })

  /** Every item of GET /items, all pages, by id. */
  const walkItems = async (server: RunningServer, key: string) => {
    const items = new Map<string, Item>()
    let cursor: string | null = null
    do {
      const res = await server.api(`/items?limit=200${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key })
      expect(res.status, res.text).toBe(200)
      const page = res.json as { items: Array<Item>; next_cursor: string | null }
      for (const item of page.items) items.set(item.id, item)
      cursor = page.next_cursor
    } while (cursor !== null)
    return items
  }

  /** Catalogue reads served from memory: GET /items, /items/search and the dump, on both nodes. */
  const reads = async (key: string, name: string) => {
    const statuses: Array<number> = []
    for (const server of [a, b]) {
      statuses.push((await server.api("/items?limit=20", { key })).status)
      statuses.push((await server.api(`/items/search?market_hash_name=${encodeURIComponent(name)}`, { key })).status)
      statuses.push((await rawGet(`${server.baseUrl}/api/v1/merchant/items/full-dump`, { authorization: `Bearer ${key}` })).status)
    }
    return statuses
  }

  /** The LISTEN connections of both nodes, by channel. */
  const listeners = async () => {
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    try {
      const rows = (await admin.query<{ query: string }>(
        "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"
      )).rows
      return Object.fromEntries(CHANNELS.map((channel) => [channel, rows.filter((r) => r.query === `LISTEN "${channel}"`).length]))
    } finally {
      await admin.end()
    }
  }

  const outage = async (downMs: number) => {
    const key = merchants[0]!.apiKey
    const name = `Outage | ${randomUUID().slice(0, 8)} (Field-Tested)`
    const itemIds = await loadItems(a, Array.from({ length: 150 }, () => itemOf(100)))
    await loadItems(a, Array.from({ length: 40 }, () => itemOf(100, { market_hash_name: name })))
    // both nodes have every item (the by-name ones came last in the log)
    for (const server of [a, b]) {
      await pollUntil("the items on both nodes", async () => {
        const res = await server.api(`/items/search?market_hash_name=${encodeURIComponent(name)}&limit=50`, { key })
        return (res.json as { results?: Array<unknown> }).results?.length === 40 ? true : undefined
      })
    }
    // a feed client on each node, from one dump
    const dump = await availableDump(b, key)
    const before = new Map<string, unknown>(dump.body.items.map((item) => [item.id, item]))
    const feeds = [await FeedFollower.start(a, key, dump.cursor, dump.epoch), await FeedFollower.start(b, key, dump.cursor, dump.epoch)]
    const watches = [new ReadyWatch(a), new ReadyWatch(b)]
    let newItems = 0
    const traffic = new Traffic([a, b], {
      itemIds,
      byName: name,
      merchants,
      newItem: () => simpleItem(randomUUID(), 500 + newItems++, name.replace("Outage", "New"))
    }, 6)

    await sleep(1_500)
    const cutAt = Date.now()
    if (downMs > 0) proxy.refuse()
    expect(proxy.cut(), "connections cut").toBeGreaterThan(0)
    const readStatuses: Array<number> = []
    if (downMs > 0) {
      for (const watch of watches) await watch.waitFor(503, cutAt)
      while (Date.now() < cutAt + downMs) {
        readStatuses.push(...await reads(key, name))
        await sleep(250)
      }
      proxy.accept()
    }
    const upAt = Date.now()
    const readyAt = await Promise.all(watches.map((watch) => watch.waitFor(200, upAt)))
    console.log(`outage of ${downMs} ms: /ready 200 again ${readyAt.map((at) => at - upAt).join(" and ")} ms after the database came back`)
    await sleep(2_000)
    await traffic.stop()
    await Promise.all(watches.map((watch) => watch.stop()))
    return { traffic, feeds, before, readStatuses, watches, cutAt, upAt }
  }

  /** Every request of every outage, by custom_id (buys) or tx_id (deposits). */
  const requests = new Map<string, Sent>()

  /** Waits until `check` passes (the background work of both nodes settles after the outage). */
  const settle = <A>(what: string, check: () => Promise<A>) =>
    eventually(check, 90_000, 250).catch((error) => {
      throw new Error(`${what}: ${String(error)}`)
    })

  const verify = async (run: Awaited<ReturnType<typeof outage>>, downMs: number) => {
    const { traffic } = run
    for (const server of [a, b]) expect(server.process.exitCode, "the process is still running").toBeNull()
    console.log(`${downMs} ms down: ${JSON.stringify(summary(traffic.sent))}`)

    // a write that failed answered 500 with the internal error code, and its repeat got a final answer
    for (const sent of traffic.sent) {
      expect(sent.statuses.filter((status) => status > 500), `${sent.kind}: ${sent.statuses}`).toEqual([])
      const internal = sent.kind === "deposit" || sent.kind === "catalogue" ? "INTERNAL_ERROR" : "MERCHANT_INTERNAL_ERROR"
      for (const code of sent.failures) expect(code, sent.kind).toBe(internal)
      expect(sent.last?.status, `${sent.kind} ${JSON.stringify(sent.body)}: ${sent.last?.text}`).toBeLessThan(300)
      const id = sent.kind === "deposit" ? sent.body["tx_id"] : sent.body["custom_id"]
      if (typeof id === "string") requests.set(id, sent)
    }

    // /ready: 503 while the database was out of reach (a cut alone may be over before it is asked), 200 after
    for (const watch of run.watches) {
      if (downMs > 0) expect(watch.seen.some((s) => s.at >= run.cutAt && s.at < run.upAt && s.status === 503)).toBe(true)
      expect(watch.seen.at(-1)?.status).toBe(200)
    }
    // catalogue reads, the dump and the feed were served from memory while it was
    expect(run.readStatuses.filter((status) => status !== 200)).toEqual([])

    // every LISTEN is back, on both nodes, and every supervised fiber runs
    await settle("the LISTENs back", async () => expect(await listeners()).toEqual(Object.fromEntries(CHANNELS.map((c) => [c, 2]))))
    for (const server of [a, b]) {
      await settle("every fiber running", async () => {
        const fibers = (await server.admin("/ops/fibers")).json as { fibers: Array<{ name: string; state: string }> }
        expect(fibers.fibers.filter((f) => f.state !== "running")).toEqual([])
      })
    }

    for (const m of merchants) {
      // nothing on hold, and the identity holds (balanceOf checks available + total_spent = total_deposited)
      const balance = await settledBalanceOf(a, m)
      const purchases = await settle("every purchase settled", async () => {
        const all = await listPurchases(a, m)
        expect(all.filter((p) => p.status !== "completed" && p.status !== "failed")).toEqual([])
        return all
      })
      // each request's purchase exists once; none exists for a request that never got one
      const byCustomId = new Map<string, Array<(typeof purchases)[number]>>()
      for (const p of purchases) byCustomId.set(p.custom_id, [...byCustomId.get(p.custom_id) ?? [], p])
      for (const [customId, found] of byCustomId) {
        const sent = requests.get(customId)
        expect(sent, `purchase ${customId} of a request never sent`).toBeDefined()
        const answered = (sent!.last!.json as { purchase_id: string }).purchase_id
        if (sent!.kind === "buy-by-name") {
          expect(found.map((p) => p.purchase_id)).toContain(answered)
          expect(found.filter((p) => p.status !== "failed").length).toBeLessThanOrEqual(1)
        } else {
          expect(found.map((p) => p.purchase_id)).toEqual([answered])
        }
      }
      const mine = [...requests.values()].filter((r) => r.merchant.id === m.id)
      for (const sent of mine) {
        if (sent.kind !== "deposit" && sent.kind !== "catalogue") expect(byCustomId.has(sent.body["custom_id"] as string)).toBe(true)
      }
      // no money lost or created: deposits credited once each, purchases paid once each
      const deposits = mine.filter((r) => r.kind === "deposit").length
      expect(balance.totalDeposited).toBe(FUNDED + deposits * DEPOSIT)
      const spent = purchases.reduce((sum, p) => sum + cents(p.price) - (p.failure === null ? 0 : cents(p.failure.refunded_amount ?? 0)), 0)
      expect(balance.totalSpent).toBe(spent)

      // every event delivered, each purchase's completion and each deposit announced once
      const events = await settle("every event delivered", async () => {
        const all = await eventsOf(a, m)
        expect(all.filter((e) => e.delivery_status !== "delivered")).toEqual([])
        return all
      })
      const received = new Set(receiver.deliveries.filter((d) => d.path === m.path).map((d) => headerOf(d.headers, "x-event-id")))
      for (const e of events) expect(received.has(e.id), `event ${e.event_type} ${e.id} received`).toBe(true)
      expect(events.filter((e) => e.event_type === "balance.deposited")).toHaveLength(1 + deposits)
      const completions = events.filter((e) => e.event_type === "purchase.completed").map((e) => e.order_id).sort()
      expect(completions).toEqual(purchases.filter((p) => p.status === "completed").map((p) => p.purchase_id).sort())
    }

    // the feed read every change: the dump it started from plus its changes is the catalogue, on both nodes
    const head = await settle("both nodes at one cursor", async () => {
      const [onA, onB] = [await metric(a, "catalogue_cursor"), await metric(b, "catalogue_cursor")]
      expect(onA).toBe(onB)
      return onB
    })
    const key = merchants[0]!.apiKey
    const catalogue = await walkItems(a, key)
    expect(await walkItems(b, key)).toEqual(catalogue)
    for (const feed of run.feeds) {
      await feed.waitForCursor(head)
      expect(feed.resets).toEqual([])
      expect(applyChanges(new Map(run.before), feed.changes())).toEqual(catalogue)
      feed.close()
    }
    // and the catalogue writes answered 200 are in it
    for (const sent of traffic.sent.filter((r) => r.kind === "catalogue")) {
      for (const item of sent.body["items"] as Array<{ id: string }>) expect(catalogue.has(item.id)).toBe(true)
    }

    // the restarts the cut caused were warnings that name it, and nothing was logged as an error
    for (const server of [a, b]) {
      expect(server.output()).toContain("supervised fiber lost its database connection; restarting")
      expect(server.unexpectedErrors()).toEqual([])
    }
  }

  it("a cut of every connection at once: each process recovers by itself, nothing lost or done twice", async () => {
    await verify(await outage(0), 0)
  })

  it("every connection cut and refused for 10 s: 503 meanwhile, reads from memory, then all caught up", async () => {
    await verify(await outage(10_000), 10_000)
  })
})

const FUNDED = 50_000
const DEPOSIT = 1_000

const eventsOf = async (server: RunningServer, m: Merchant) => {
  const all: Array<{ id: string; event_type: string; order_id: string | null; delivery_status: string }> = []
  let cursor: string | null = null
  do {
    const page: { events: ReadonlyArray<(typeof all)[number]>; next_cursor: string | null } = await server.merchant(m.apiKey).call((client) =>
      client.webhooks.listWebhookEvents({ urlParams: { limit: 200, ...(cursor !== null ? { cursor } : {}) } })
    )
    all.push(...page.events)
    cursor = page.next_cursor
  } while (cursor !== null)
  return all
}

const summary = (sent: ReadonlyArray<Sent>) => {
  const out: Record<string, Record<string, number>> = {}
  for (const s of sent) {
    const by = (out[s.kind] ??= {})
    const key = s.statuses.join(",")
    by[key] = (by[key] ?? 0) + 1
  }
  return out
}
