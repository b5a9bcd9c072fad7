/**
 * Crash recovery of purchases (CONTRACT 1, 5; spec 2.2, 4.4): a server killed with SIGKILL while
 * purchases are being created and processed, and a new server on the same database. Every
 * request repeated with its custom_id lands on one purchase, every purchase finishes exactly once
 * (one provider order, one debit, at most one refund, one event per transition) and the balance
 * is exact. A reversal that happened while no server ran is still applied.
 */
import pg from "pg"
import { afterEach, describe, expect, it } from "vitest"
import { Feed } from "../support/catalogue.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { withStoppedDatabase } from "../support/purchases-db.js"
import {
  balanceOf,
  bought,
  buy,
  buyBody,
  buyByName,
  byNameBody,
  type Detail,
  expectPurchaseCreated,
  fundedMerchant,
  isTerminal,
  itemOf,
  listPurchases,
  loadItems,
  type Merchant,
  PARTNER,
  pollUntil,
  PURCHASE_ENV,
  sleep,
  steamIdOf,
  TOKENS,
  uniqueName
} from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

/** Slower simulated provider: a purchase takes about 1.5 to 5 s, reversals come 6 s after completion. */
const ENV = { ...PURCHASE_ENV, SIM_TIME_SCALE: "0.2" }

const cleanup: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined)
})

/** A database the test owns (not dropped when a server stops), and servers stopped at the end. */
const ownDatabase = async () => {
  const database = await freshDatabase()
  cleanup.push(() => database.drop())
  return database
}
const serve = async (database: FreshDatabase) => {
  const server = await startServer({ env: ENV, database })
  cleanup.push(() => server.stop("SIGKILL"))
  return server
}

/**
 * For buy-by-name cycles: a database, a server whose by-name budget is long enough for a kill, a
 * restart and the dead process's lease to run out, a funded merchant and a fresh item name.
 */
const byNameSetting = async (prefix: string) => {
  const database = await ownDatabase()
  const env = { ...ENV, BY_NAME_BUDGET_SECONDS: "60" }
  const first = await startServer({ env, database })
  cleanup.push(() => first.stop("SIGKILL"))
  return { database, env, first, m: await fundedMerchant(first, 10_000), name: uniqueName(prefix) }
}

const waitAll = (server: RunningServer, m: Merchant, count: number, done: (d: Detail) => boolean, timeoutMs = 120_000) =>
  pollUntil(
    `${count} purchases done`,
    async () => {
      const list = await listPurchases(server, m)
      return list.length === count && list.every(done) ? list : undefined
    },
    timeoutMs,
    200
  )

describe("a SIGKILLed server and a new one on the same database", () => {
  it("finishes every purchase exactly once", async () => {
    const database = await ownDatabase()
    const first = await serve(database)
    const m = await fundedMerchant(first, 10_000)
    const n = 20
    const prices = Array.from({ length: n }, (_, i) => 101 + i)
    const itemIds = await loadItems(first, prices.map((c) => itemOf(c)))
    const declined = (i: number) => i % 5 === 4
    const bodies = itemIds.map((itemId, i) =>
      buyBody({ itemId, maxPrice: 2, customId: `crash-${i}`, token: declined(i) ? TOKENS.declined : `ok${String(i).padStart(6, "0")}` })
    )

    // 12 answered, then 8 sent as the server dies: their outcome is unknown to the client
    const answered: Array<string> = []
    for (const body of bodies.slice(0, 12)) answered.push((await bought(first, m, body)).purchase_id)
    const unknown = bodies.slice(12).map((body) => buy(first, m, body).then((r) => r.status, () => "network error"))
    await sleep(20)
    await first.stop("SIGKILL")
    await Promise.all(unknown)

    const second = await serve(database)
    // spec 4.4 rule 4: after an unknown result, repeat the same request
    const ids: Array<string> = []
    for (const body of bodies) ids.push((await bought(second, m, body)).purchase_id)
    expect(ids.slice(0, 12)).toEqual(answered)
    expect(new Set(ids).size).toBe(n)

    const final = await waitAll(second, m, n, (d) => isTerminal(d.status))
    const byId = new Map(final.map((p) => [p.purchase_id, p]))
    let spent = 0
    for (let i = 0; i < n; i++) {
      const p = byId.get(ids[i]!)!
      expect(p.custom_id).toBe(`crash-${i}`)
      expect(p.price * 100).toBeCloseTo(prices[i]!, 6)
      expect(p.trade_offer_id).not.toBeNull()
      if (declined(i)) {
        expect(p).toMatchObject({ status: "failed", completed_at: null, failure: { code: "TRADE_DECLINED", refunded_amount: prices[i]! / 100 } })
      } else {
        expect(p).toMatchObject({ status: "completed", failure: null })
        expect(p.completed_at).not.toBeNull()
        spent += prices[i]!
      }
      expect(await listPurchases(second, m, { custom_id: `crash-${i}` })).toHaveLength(1)
    }
    expect(await balanceOf(second, m)).toEqual({ available: 10_000 - spent, onHold: 0, totalDeposited: 10_000, totalSpent: spent })
    // repeats after the end change nothing
    for (const body of bodies.slice(0, 3)) await bought(second, m, body)
    expect(await balanceOf(second, m)).toMatchObject({ totalSpent: spent })

    await second.stop()
    await withStoppedDatabase(database, async (query) => {
      const orders = await query<{ purchase_id: string; n: number }>(
        "SELECT purchase_id::text AS purchase_id, count(*)::int AS n FROM sim_provider_orders GROUP BY purchase_id"
      )
      expect(orders.map((o) => o.purchase_id).sort(), "one provider order per purchase").toEqual([...ids].sort())
      for (const o of orders) expect(o.n, `provider orders of ${o.purchase_id}`).toBe(1)

      const ledger = await query<{ kind: string; ref: string; n: number; amount: string }>(
        `SELECT kind, reference_id::text AS ref, count(*)::int AS n, sum(amount_cents)::text AS amount
         FROM ledger_entries WHERE merchant_id = $1 AND kind <> 'deposit_credit' GROUP BY kind, reference_id`,
        [m.id]
      )
      const expectedLedger = ids.flatMap((id, i) => [
        { kind: "purchase_debit", ref: id, n: 1, amount: String(-prices[i]!) },
        ...(declined(i) ? [{ kind: "purchase_refund", ref: id, n: 1, amount: String(prices[i]!) }] : [])
      ])
      const order = (rows: ReadonlyArray<{ kind: string; ref: string }>) => [...rows].sort((a, b) => `${a.kind}${a.ref}`.localeCompare(`${b.kind}${b.ref}`))
      expect(order(ledger)).toEqual(order(expectedLedger))

      const events = await query<{ order_id: string; event_type: string; n: number }>(
        `SELECT order_id::text AS order_id, event_type, count(*)::int AS n FROM webhook_events
         WHERE merchant_id = $1 AND order_id IS NOT NULL GROUP BY order_id, event_type`,
        [m.id]
      )
      for (const e of events) expect(e.n, `${e.event_type} of ${e.order_id}`).toBe(1)
      for (let i = 0; i < n; i++) {
        const types = events.filter((e) => e.order_id === ids[i]).map((e) => e.event_type).sort()
        expect(types).toEqual(
          declined(i)
            ? ["purchase.created", "purchase.failed", "purchase.processing", "purchase.refunded", "purchase.sent_to_steam"]
            : ["purchase.completed", "purchase.created", "purchase.processing", "purchase.sent_to_steam"]
        )
      }

      // each event's body (CONTRACT 4): the purchase's state at that event, no nulls; the created
      // event's balance_after is the available balance its debit left (the ledger row's)
      const bodies = await query<{ id: string; order_id: string; event_type: string; body: string; after: string }>(
        `SELECT e.id::text AS id, e.order_id::text AS order_id, e.event_type, e.body, l.available_after_cents::text AS after
         FROM webhook_events e JOIN ledger_entries l ON l.reference_id = e.order_id AND l.kind = 'purchase_debit'
         WHERE e.merchant_id = $1 AND e.order_id IS NOT NULL`,
        [m.id]
      )
      expect(bodies).toHaveLength(events.length)
      const statusAt: Record<string, string> = {
        "purchase.created": "created",
        "purchase.processing": "processing",
        "purchase.sent_to_steam": "sent_to_steam",
        "purchase.completed": "completed",
        "purchase.failed": "failed",
        "purchase.refunded": "failed"
      }
      for (const e of bodies) {
        const i = ids.indexOf(e.order_id)
        const parsed = JSON.parse(e.body) as { event_id: string; event_type: string; data: Record<string, unknown> }
        expect(parsed).toMatchObject({ event_id: e.id, event_type: e.event_type })
        expect(parsed.data).toMatchObject({
          purchase_id: e.order_id,
          custom_id: `crash-${i}`,
          status: statusAt[e.event_type],
          price: prices[i]! / 100,
          target_steam_id: steamIdOf(PARTNER)
        })
        expect(Object.values(parsed.data).filter((v) => v === null), `${e.event_type} of ${e.order_id}`).toEqual([])
        if (e.event_type === "purchase.created") expect(parsed.data["balance_after"]).toBe(Number(e.after) / 100)
      }

      // every bought item left the catalogue through the change log exactly once; none is left queued
      const removals = (await query<{ item_id: string }>("SELECT item_id::text AS item_id FROM catalogue_changes WHERE op = 'remove'"))
        .map((r) => r.item_id)
      expect([...removals].sort()).toEqual([...itemIds].sort())
      expect(await query("SELECT item_id FROM catalogue_reservations")).toEqual([])
    })
  }, 300_000)

  it("logs the removal of an item that a process reserved and died before logging", async () => {
    const database = await ownDatabase()
    const first = await serve(database)
    const m = await fundedMerchant(first, 10_000)
    const [itemId, other] = await loadItems(first, [itemOf(300), itemOf(400)])
    await first.stop("SIGKILL")
    // what a buy leaves when its process dies right after the commit: the item reserved, its removal queued
    const log = await withStoppedDatabase(database, async (query) => {
      await query("UPDATE catalogue_items SET status = 'reserved' WHERE id = $1", [itemId])
      await query("INSERT INTO catalogue_reservations (item_id) VALUES ($1)", [itemId])
      const [state] = await query<{ epoch: number; head: number }>("SELECT epoch, head_seq::int AS head FROM catalogue_state")
      return state!
    })

    const second = await serve(database)
    const feed = await Feed.open(second, m.apiKey, log.head, log.epoch)
    cleanup.push(async () => feed.close())
    await feed.waitForCursor(log.head + 1)
    expect(feed.changes()).toEqual([{ op: "remove", id: itemId }])
    // the other item is still for sale, the reserved one is not
    expect((await buy(second, m, buyBody({ itemId: itemId!, maxPrice: 5 }))).status).toBe(409)
    await bought(second, m, buyBody({ itemId: other!, maxPrice: 5 }))
    await feed.waitForCursor(log.head + 2)
    expect(feed.changes()).toEqual([{ op: "remove", id: itemId }, { op: "remove", id: other }])
    await second.stop()
    await withStoppedDatabase(database, async (query) => {
      expect(await query("SELECT item_id FROM catalogue_reservations")).toEqual([])
    })
  }, 120_000)

  it("carries a buy-by-name cycle whose server died on, on the new server, within the cycle's budget: one cycle, exact money", async () => {
    const { database, env, first, m, name } = await byNameSetting("Cycle")
    // the four cheapest are rejected at acquisition (refunded), the fifth is delivered
    await loadItems(first, [
      ...[100, 101, 102, 103].map((c) => itemOf(c, { market_hash_name: name, sim: { acquire: "unavailable" } })),
      itemOf(200, { market_hash_name: name })
    ])
    const body = byNameBody({ name, maxPrice: 5 })
    const answered = buyByName(first, m, body).catch(() => undefined)
    await pollUntil(
      "the cycle's first attempt",
      async () => (await listPurchases(first, m, { custom_id: body.custom_id })).length >= 1 ? true : undefined,
      30_000,
      20
    )
    await first.stop("SIGKILL")
    await answered

    const second = await startServer({ env, database })
    cleanup.push(() => second.stop("SIGKILL"))
    const final = await pollUntil(
      "the cycle carried on to the delivered item",
      async () => {
        const list = await listPurchases(second, m, { custom_id: body.custom_id })
        return list.some((d) => d.status === "completed") && list.every((d) => isTerminal(d.status)) ? list : undefined
      },
      90_000,
      250
    ).catch(async (error) => {
      throw new Error(`${String(error)}: ${JSON.stringify((await listPurchases(second, m, { custom_id: body.custom_id })).map((d) => [d.price, d.status]))}`)
    })
    // cheapest first, each item once, five attempts in all: the four rejected ones refunded
    expect(final.map((d) => [d.price, d.status]).reverse()).toEqual([[1, "failed"], [1.01, "failed"], [1.02, "failed"], [1.03, "failed"], [2, "completed"]])
    for (const d of final.filter((p) => p.status === "failed")) expect(d.failure).toMatchObject({ code: "ITEM_UNAVAILABLE", refunded_amount: d.price })
    expect(await balanceOf(second, m)).toEqual({ available: 9_800, onHold: 0, totalDeposited: 10_000, totalSpent: 200 })
    // a repeat reads the delivered attempt and starts nothing
    const repeat = await buyByName(second, m, body)
    expect(expectPurchaseCreated(repeat, 200).purchase_id).toBe(final.find((d) => d.status === "completed")!.purchase_id)
    await sleep(3_000)
    expect((await listPurchases(second, m, { custom_id: body.custom_id })).length).toBe(5)
    // the recovery is a supervised fiber of every process
    const fibers = (await (await fetch(`${second.opsUrl}/ops/fibers`)).json()) as {
      fibers: Array<{ name: string; state: string; last_heartbeat: string | null }>
    }
    expect(fibers.fibers.find((f) => f.name === "purchase-by-name-recovery")).toMatchObject({ state: "running", last_heartbeat: expect.any(String) })
  }, 180_000)

  it("ends a taken-over buy-by-name cycle whose attempt was accepted and then reversed: no second item is bought", async () => {
    const { database, env, first, m, name } = await byNameSetting("Reversed")
    await loadItems(first, [itemOf(100, { market_hash_name: name }), itemOf(101, { market_hash_name: name })])
    const body = byNameBody({ name, maxPrice: 5, token: TOKENS.revbuyer })
    expect((await buyByName(first, m, body)).status).toBe(200)
    await pollUntil(
      "the buyer's reversal",
      async () => {
        const [attempt] = await listPurchases(first, m, { custom_id: body.custom_id })
        return attempt?.failure?.code === "REVERTED_BY_BUYER" ? attempt : undefined
      },
      60_000,
      250
    )
    await first.stop("SIGKILL")
    // what a process that died while the attempt awaited its verdict leaves, once the attempt was
    // accepted, delivered and reversed (a database outage can apply all of it in one step): the
    // cycle still running, its lease run out, budget left
    await withStoppedDatabase(database, async (query) => {
      await query(
        `UPDATE purchase_requests SET cycle_state = 'running', cycle_owner = 'dead', cycle_lease_until = now() - interval '1 minute',
                   cycle_deadline = now() + interval '1 minute' WHERE custom_id = $1`,
        [body.custom_id]
      )
    })
    const second = await startServer({ env, database })
    cleanup.push(() => second.stop("SIGKILL"))
    // the recovery looks every 2 s; a second attempt, if it were made, takes well under a second
    await sleep(8_000)
    const after = await listPurchases(second, m, { custom_id: body.custom_id })
    expect(after.map((d) => [d.price, d.status, d.failure?.code])).toEqual([[1, "failed", "REVERTED_BY_BUYER"]])
    expect(await balanceOf(second, m)).toEqual({ available: 9_900, onHold: 0, totalDeposited: 10_000, totalSpent: 100 })
    await second.stop()
    const [record] = await withStoppedDatabase(
      database,
      (query) =>
        query<{ cycle_state: string; cycle_owner: string }>("SELECT cycle_state, cycle_owner FROM purchase_requests WHERE custom_id = $1", [body.custom_id])
    )
    // taken over (no longer the dead owner's) and ended
    expect(record!.cycle_state).toBe("done")
    expect(record!.cycle_owner).not.toBe("dead")
  }, 180_000)

  it("applies a trade reversal that happened while no server was running", async () => {
    const database = await ownDatabase()
    const first = await serve(database)
    const m = await fundedMerchant(first, 10_000)
    const tokens = [TOKENS.revseller, TOKENS.revbuyer, TOKENS.revseller, TOKENS.revbuyer]
    const itemIds = await loadItems(first, tokens.map(() => itemOf(500)))
    const ids: Array<string> = []
    for (let i = 0; i < tokens.length; i++) {
      ids.push((await bought(first, m, buyBody({ itemId: itemIds[i]!, maxPrice: 5, token: tokens[i] }))).purchase_id)
    }
    await first.stop("SIGKILL")
    // the outage outlasts delivery (at most 5 s after pickup here) and the reversal 6 s after it
    await sleep(12_000)
    const second = await serve(database)
    const final = await waitAll(second, m, tokens.length, (d) => d.status === "failed", 60_000).catch(async (error) => {
      throw new Error(`${String(error)}: ${JSON.stringify((await listPurchases(second, m)).map((p) => [p.status, p.failure?.code]))}`)
    })
    for (let i = 0; i < tokens.length; i++) {
      const p = final.find((d) => d.purchase_id === ids[i])!
      expect(p.trade_offer_id).not.toBeNull()
      expect(p.failure).toMatchObject(
        tokens[i] === TOKENS.revseller
          ? { code: "REVERTED_BY_SELLER", refunded_amount: 5 }
          : { code: "REVERTED_BY_BUYER", refunded_amount: 0 }
      )
    }
    expect(await balanceOf(second, m)).toEqual({ available: 9_000, onHold: 0, totalDeposited: 10_000, totalSpent: 1_000 })
  }, 300_000)
})

/**
 * A server, a funded merchant, an item of 2.50 and a client of the database (PostgreSQL only) whose
 * trigger holds every new purchase back a day, after `alsoSet` (PL/pgSQL assignments to NEW).
 */
const serveHoldingNewPurchases = async (alsoSet: string) => {
  const database = await ownDatabase()
  const server = await serve(database)
  const m = await fundedMerchant(server, 10_000)
  const [itemId] = await loadItems(server, [itemOf(250)])
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  cleanup.push(() => client.end())
  await client.query(`CREATE FUNCTION held_purchase() RETURNS trigger AS $$
    BEGIN ${alsoSet} NEW.next_step_at := now() + interval '1 day'; RETURN NEW; END $$ LANGUAGE plpgsql`)
  await client.query("CREATE TRIGGER held_purchase BEFORE INSERT ON purchases FOR EACH ROW EXECUTE FUNCTION held_purchase()")
  return { server, m, itemId: itemId!, client }
}

describe.runIf(!!process.env["DATABASE_URL"])("a purchase without a provider request id (DATABASE_URL only)", () => {
  it("gets one recorded before the provider is called, and is ordered exactly once under it", async () => {
    // purchases as written before the request id was stored with them, held back a day meanwhile
    const { server, m, itemId, client } = await serveHoldingNewPurchases("NEW.provider_request_id := NULL;")
    const created = await bought(server, m, buyBody({ itemId, maxPrice: 5 }))
    const stored = () => client.query<{ id: string | null }>("SELECT provider_request_id::text AS id FROM purchases WHERE id = $1", [created.purchase_id])
    expect((await stored()).rows[0]!.id).toBeNull()

    await client.query("UPDATE purchases SET next_step_at = now() WHERE id = $1", [created.purchase_id])
    const [done] = await waitAll(server, m, 1, (d) => isTerminal(d.status))
    expect(done).toMatchObject({ status: "completed", failure: null })
    const orders = await client.query<{ request_id: string }>(
      "SELECT request_id::text AS request_id FROM sim_provider_orders WHERE purchase_id = $1",
      [created.purchase_id]
    )
    expect(orders.rows).toHaveLength(1)
    expect((await stored()).rows[0]!.id).toBe(orders.rows[0]!.request_id)
    expect(await balanceOf(server, m)).toEqual({ available: 10_000 - 250, onHold: 0, totalDeposited: 10_000, totalSpent: 250 })
  }, 120_000)
})

describe.runIf(!!process.env["DATABASE_URL"])("a purchase leased by a process that died (DATABASE_URL only)", () => {
  it("is taken over as soon as the lease runs out, not at the claimer's next idle look", async () => {
    // the new purchase is held back a day, so this server's worker leaves it alone
    const { server, m, itemId, client } = await serveHoldingNewPurchases("")
    const created = await bought(server, m, buyBody({ itemId, maxPrice: 5 }))

    // now due, but leased for 3 s more by a process that is gone; another process's step end wakes the claimer
    const leaseEnd = Number(
      (await client.query<{ end: string }>(
        `UPDATE purchases SET next_step_at = now(), lease_owner = 'process-that-died', lease_until = now() + interval '3 seconds'
       WHERE id = $1 RETURNING (extract(epoch FROM lease_until) * 1000)::text AS end`,
        [created.purchase_id]
      )).rows[0]!.end
    )
    await client.query("SELECT pg_notify('purchase_changed', $1)", [created.purchase_id])

    // the claimer idles up to 5 s between looks; the lease's end is what it must wake for
    const takenAt = await pollUntil(
      "the lease taken over",
      async () => {
        const row = (await client.query<{ owner: string | null; at: string }>(
          "SELECT lease_owner AS owner, (extract(epoch FROM clock_timestamp()) * 1000)::text AS at FROM purchases WHERE id = $1",
          [created.purchase_id]
        )).rows[0]!
        return row.owner !== "process-that-died" ? Number(row.at) : undefined
      },
      10_000,
      20
    )
    expect(takenAt).toBeGreaterThanOrEqual(leaseEnd)
    expect(takenAt - leaseEnd).toBeLessThan(1_500)

    const [done] = await waitAll(server, m, 1, (d) => isTerminal(d.status))
    expect(done).toMatchObject({ status: "completed", failure: null })
    expect(await balanceOf(server, m)).toEqual({ available: 10_000 - 250, onHold: 0, totalDeposited: 10_000, totalSpent: 250 })
  }, 120_000)
})
