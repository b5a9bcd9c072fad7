/**
 * Purchase rows left by older or dead processes (CONTRACT 1, 5; PostgreSQL only, where a trigger
 * holds new purchases back): a purchase stored without a provider request id gets one before the
 * provider is called and is ordered exactly once under it; a purchase leased by a process that died
 * is taken over as soon as the lease runs out.
 */
import pg from "pg"
import { describe, expect, it } from "vitest"
import { crashHarness, waitAll } from "../support/purchase-crashes.js"
import { balanceOf, bought, buyBody, fundedMerchant, isTerminal, itemOf, loadItems, pollUntil } from "../support/purchases.js"

const { cleanup, ownDatabase, serve } = crashHarness()

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
