/**
 * The events recorded for a purchase's refunds and reversals (CONTRACT 4; REVERT_UNKNOWN through an
 * item's `sim` hint), read from the stopped database: each transition once, in the order written, and `refunded_amount` in every event
 * written once the refund is known (the seller's reversal is refunded in the same transaction as
 * its purchase.reverted, so that event carries it too).
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "vitest"
import { freshDatabase } from "../support/database.js"
import { withStoppedDatabase } from "../support/purchases-db.js"
import {
  balanceOf,
  bought,
  buyBody,
  fundedMerchant,
  getPurchase,
  isTerminal,
  itemOf,
  loadItems,
  PURCHASE_ENV,
  TOKENS,
  watchPurchase
} from "../support/purchases.js"
import { startServer } from "../support/server.js"

describe("purchase events of refunds and reversals (CONTRACT 4)", () => {
  it(
    "declined, reversed by the buyer, by the seller, by an unknown party: the events in order, refunded_amount wherever the refund is known, no automatic refund of REVERT_UNKNOWN",
    async () => {
      const database = await freshDatabase()
      const server = await startServer({ database, env: PURCHASE_ENV })
      const m = await fundedMerchant(server, 10_000)
      const cases = [
        { token: TOKENS.declined, reversal: false },
        { token: TOKENS.revbuyer, reversal: true },
        { token: TOKENS.revseller, reversal: true },
        // an ordinary token on an item whose simulated trade is reversed by an unknown party
        { token: "complete", reversal: true, sim: { reversal: "unknown" as const } }
      ]
      const items = await loadItems(server, cases.map((c) => itemOf(1_234, c.sim === undefined ? {} : { sim: c.sim })))
      const before = await balanceOf(server, m)
      const ids: Array<string> = []
      try {
        for (const [i, c] of cases.entries()) {
          const body = buyBody({ itemId: items[i]!, maxPrice: 20, customId: `ev-${c.token}-${randomUUID().slice(0, 8)}`, token: c.token })
          const created = await bought(server, m, body)
          ids.push(created.purchase_id)
          await watchPurchase(server, m, created.purchase_id, c.reversal ? (d) => d.status === "failed" : (d) => isTerminal(d.status))
        }
        // no automatic refund for REVERT_UNKNOWN: the balance moved by the two unrefunded purchases only (buyer and unknown reversals)
        const after = await balanceOf(server, m)
        expect(after).toEqual({ ...before, available: before.available - 2 * 1_234, totalSpent: before.totalSpent + 2 * 1_234 })
        const unknown = await getPurchase(server, m, ids[3]!)
        expect([unknown.status, unknown.failure?.code, unknown.failure?.refunded_amount]).toEqual(["failed", "REVERT_UNKNOWN", null])
      } finally {
        await server.stop()
      }

      const events = await withStoppedDatabase(database, (query) =>
        query<{ order_id: string; event_type: string; body: string }>(
          "SELECT order_id::text AS order_id, event_type, body FROM webhook_events WHERE order_id IS NOT NULL ORDER BY seq"
        ))
      await database.drop()
      const of = (id: string) =>
        events.filter((e) => e.order_id === id).map((e) => ({ type: e.event_type, data: (JSON.parse(e.body) as { data: Record<string, unknown> }).data }))
      const summary = (id: string) => of(id).map((e) => [e.type, e.data["status"], e.data["refunded_amount"], e.data["failure_code"]])

      const [declined, byBuyer, bySeller, byUnknown] = ids as [string, string, string, string]
      // every one of them had its trade offer sent; the reversed ones were delivered first
      const offered = [
        ["purchase.created", "created", undefined, undefined],
        ["purchase.processing", "processing", undefined, undefined],
        ["purchase.sent_to_steam", "sent_to_steam", undefined, undefined]
      ]
      const delivered = [...offered, ["purchase.completed", "completed", undefined, undefined]]
      expect(summary(declined)).toEqual([
        ...offered,
        ["purchase.failed", "failed", 12.34, "TRADE_DECLINED"],
        ["purchase.refunded", "failed", 12.34, "TRADE_DECLINED"]
      ])
      expect(summary(byBuyer)).toEqual([...delivered, ["purchase.reverted", "failed", 0, "REVERTED_BY_BUYER"]])
      expect(summary(bySeller)).toEqual([
        ...delivered,
        ["purchase.reverted", "failed", 12.34, "REVERTED_BY_SELLER"],
        ["purchase.refunded", "failed", 12.34, "REVERTED_BY_SELLER"]
      ])
      expect(summary(byUnknown)).toEqual([...delivered, ["purchase.reverted", "failed", undefined, "REVERT_UNKNOWN"]])
      // the refund's event carries the balance it left
      for (const id of [declined, bySeller]) expect(typeof of(id).at(-1)!.data["balance_after"]).toBe("number")
    },
    120_000
  )
})
