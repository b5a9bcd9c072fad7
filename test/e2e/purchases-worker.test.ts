/**
 * The purchase worker takes the first steps of purchases bought together together: what is handed
 * over within its gather window is placed with the provider in one call (the simulator writes those
 * orders in one statement, so they share its transaction's timestamp) and moved to processing in
 * one statement, each with its own event.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { withStoppedDatabase } from "../support/purchases-db.js"
import { bought, buyBody, fundedMerchant, itemOf, listPurchases, loadItems, pollUntil, PURCHASE_ENV } from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

describe("the purchase worker's first steps", () => {
  let database: FreshDatabase
  let server: RunningServer
  beforeAll(async () => {
    database = await freshDatabase()
    // a slow provider: every purchase stays in processing while the test looks
    server = await startServer({ env: { ...PURCHASE_ENV, SIM_TIME_SCALE: "10" }, database })
  })
  afterAll(async () => {
    await server?.stop()
    await database?.drop()
  })

  it("places the orders of purchases bought at once in fewer provider calls than purchases, each moved to processing once", async () => {
    const m = await fundedMerchant(server, 100_000)
    const n = 12
    const itemIds = await loadItems(server, Array.from({ length: n }, (_, i) => itemOf(100 + i)))
    const created = await Promise.all(itemIds.map((itemId, i) => bought(server, m, buyBody({ itemId, maxPrice: 5, customId: `together-${i}` }))))
    const ids = created.map((c) => c.purchase_id)
    await pollUntil("every purchase processing", async () => {
      const list = await listPurchases(server, m)
      return list.length === n && list.every((p) => p.status === "processing") ? list : undefined
    })
    await server.stop()
    await withStoppedDatabase(database, async (query) => {
      const orders = await query<{ purchase_id: string; placed: string }>(
        "SELECT purchase_id::text AS purchase_id, created_at::text AS placed FROM sim_provider_orders"
      )
      expect(orders.map((o) => o.purchase_id).sort(), "one order per purchase").toEqual([...ids].sort())
      expect(new Set(orders.map((o) => o.placed)).size, "provider calls").toBeLessThan(n)
      const events = await query<{ order_id: string }>(
        "SELECT order_id::text AS order_id FROM webhook_events WHERE event_type = 'purchase.processing'"
      )
      expect(events.map((e) => e.order_id).sort(), "one processing event per purchase").toEqual([...ids].sort())
    })
  }, 120_000)
})
