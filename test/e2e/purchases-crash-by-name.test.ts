/**
 * Buy-by-name cycles across a SIGKILL (CONTRACT 1, 5; spec 4.3, 4.4 rule 3): a new server on the
 * same database carries a cycle whose server died on to the delivered item within the cycle's
 * budget (one cycle, exact money, a repeat starting nothing), and ends a taken-over cycle whose
 * attempt was accepted and then reversed without buying a second item.
 */
import { describe, expect, it } from "vitest"
import { CRASH_ENV, crashHarness } from "../support/purchase-crashes.js"
import { withStoppedDatabase } from "../support/purchases-db.js"
import {
  balanceOf,
  buyByName,
  byNameBody,
  expectPurchaseCreated,
  fundedMerchant,
  isTerminal,
  itemOf,
  listPurchases,
  loadItems,
  pollUntil,
  sleep,
  TOKENS,
  uniqueName
} from "../support/purchases.js"
import { startServer } from "../support/server.js"

const { cleanup, ownDatabase } = crashHarness()

/**
 * For buy-by-name cycles: a database, a server whose by-name budget is long enough for a kill, a
 * restart and the dead process's lease to run out, a funded merchant and a fresh item name.
 */
const byNameSetting = async (prefix: string) => {
  const database = await ownDatabase()
  const env = { ...CRASH_ENV, BY_NAME_BUDGET_SECONDS: "60" }
  const first = await startServer({ env, database })
  cleanup.push(() => first.stop("SIGKILL"))
  return { database, env, first, m: await fundedMerchant(first, 10_000), name: uniqueName(prefix) }
}

describe("buy-by-name cycles of a SIGKILLed server, on a new one on the same database", () => {
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
})
