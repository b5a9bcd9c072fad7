/**
 * Crash recovery of purchases (CONTRACT 1, 5; spec 2.2, 4.4): a server killed with SIGKILL while
 * purchases are being created and processed, and a new server on the same database. Every
 * request repeated with its custom_id lands on one purchase, every purchase finishes exactly once
 * (one provider order, one debit, at most one refund, one event per transition) and the balance
 * is exact. A removal queued by a process that died is logged, and a reversal that happened while
 * no server ran is still applied. Buy-by-name cycles across a kill are in
 * purchases-crash-by-name.test.ts, rows left by older or dead processes in purchases-crash-leases.test.ts.
 */
import { describe, expect, it } from "vitest"
import { Feed } from "../support/catalogue.js"
import { crashHarness, waitAll } from "../support/purchase-crashes.js"
import { withStoppedDatabase } from "../support/purchases-db.js"
import {
  balanceOf,
  bought,
  buy,
  buyBody,
  fundedMerchant,
  isTerminal,
  itemOf,
  listPurchases,
  loadItems,
  PARTNER,
  sleep,
  steamIdOf,
  TOKENS
} from "../support/purchases.js"

const { cleanup, ownDatabase, serve } = crashHarness()

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
