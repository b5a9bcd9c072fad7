/**
 * Purchases over real sockets once created (spec 2.2, 2.9, 3.1, 4.3, 7.3; CONTRACT 5.1): the state
 * machine and money movement of every simulator token, the bought item leaving the catalogue, the
 * worker's handover, and GET /purchases (filters, order, pagination, isolation).
 */
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError, isUuid } from "../support/expectations.js"
import {
  balanceOf,
  bought,
  buy,
  buyBody,
  type Detail,
  fundedMerchant,
  getPurchase,
  IN_FLIGHT,
  IN_FLIGHT_STATUSES,
  itemOf,
  listedIds,
  listPurchases,
  loadItem,
  loadItems,
  type Merchant,
  PARTNER,
  pollUntil,
  PURCHASE_ENV,
  sleep,
  steamIdOf,
  TOKENS,
  watchPurchase
} from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"
import { TOKEN_OUTCOMES } from "../support/token-outcomes.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: PURCHASE_ENV })
})
afterAll(async () => {
  await server?.stop()
})

describe("the state machine of every simulator token (spec 2.2, 3.1, 7.3; CONTRACT 5.1)", () => {
  it.each(TOKEN_OUTCOMES)("token $token ends $status $code with the right money movement", async (e) => {
    const deposited = 5_000
    const price = 1_234
    const m = await fundedMerchant(server, deposited)
    const input = itemOf(price, { estimated_delivery_minutes: 42, exterior: "Minimal Wear", float: 0.0712 })
    const [itemId] = await loadItems(server, [input])
    const customId = `sm-${e.token}-${randomUUID().slice(0, 8)}`
    const created = await bought(server, m, buyBody({ itemId: itemId!, maxPrice: 20, customId, token: e.token }))
    expect(created).toMatchObject({
      custom_id: customId,
      status: "created",
      item: { market_hash_name: input.market_hash_name, price: 12.34, delivery_type: "instant", estimated_delivery_minutes: 42 },
      balance_after: (deposited - price) / 100
    })

    // while in flight, the price is on hold (read between two reads that both show it in flight)
    const during = await getPurchase(server, m, created.purchase_id)
    const balanceDuring = await balanceOf(server, m)
    const after = await getPurchase(server, m, created.purchase_id)
    if (IN_FLIGHT.includes(during.status) && IN_FLIGHT.includes(after.status)) {
      expect(balanceDuring).toEqual({ available: deposited - price, onHold: price, totalDeposited: deposited, totalSpent: price })
    }

    const done = e.reversal === true ? (d: Detail) => d.status === "failed" : (d: Detail) => d.status === "completed" || d.status === "failed"
    const { final, path } = await watchPurchase(server, m, created.purchase_id, done)
    expect(final.status).toBe(e.status)
    if (e.reversal === true) expect(path).toContain("completed")
    expect(final).toMatchObject({
      purchase_id: created.purchase_id,
      custom_id: customId,
      item: {
        id: itemId,
        market_hash_name: input.market_hash_name,
        image_url: input.image_url,
        exterior: "Minimal Wear",
        float: 0.0712,
        delivery_type: "instant",
        estimated_delivery_minutes: 42
      },
      price: 12.34,
      target_steam_id: steamIdOf(PARTNER),
      created_at: created.created_at
    })
    if (e.code === null) {
      expect(final.failure).toBeNull()
    } else {
      expect(final.failure?.code).toBe(e.code)
      expect(final.failure?.message.length).toBeGreaterThan(0)
      const refunded = final.failure?.refunded_amount
      if (e.refund === "full") expect(refunded).toBe(12.34)
      if (e.refund === "zero") expect(refunded).toBe(0)
      if (e.refund === "null") expect(refunded).toBeNull()
    }
    if (e.offer) {
      expect(final.trade_offer_id).toMatch(/^\d+$/)
      expect(final.trade_offer_url).toContain(final.trade_offer_id)
    } else {
      expect(final.trade_offer_id).toBeNull()
      expect(final.trade_offer_url).toBeNull()
    }
    if (e.delivered) {
      expect(final.completed_at).not.toBeNull()
      expect(Date.parse(final.completed_at!)).toBeGreaterThanOrEqual(Date.parse(final.created_at))
    } else {
      expect(final.completed_at).toBeNull()
    }

    // money (spec 2.2): only an applied refund credits; completion and every end release on_hold
    const spent = e.refund === "full" ? 0 : price
    expect(await balanceOf(server, m)).toEqual({ available: deposited - spent, onHold: 0, totalDeposited: deposited, totalSpent: spent })
    // the list shows the same purchase
    const listed = await listPurchases(server, m)
    expect(listed.map((p) => p.purchase_id)).toEqual([created.purchase_id])
    expect(listed[0]).toEqual(final)
  })

  it("the bought item leaves GET /items", async () => {
    const m = await fundedMerchant(server, 10_000)
    const name = `Leaving | ${randomUUID().slice(0, 8)}`
    const [sold, stays] = await loadItems(server, [itemOf(300, { market_hash_name: name }), itemOf(400, { market_hash_name: name })])
    await pollUntil("both items listed", async () => (await listedIds(server, m, name)).length === 2 ? true : undefined)
    await bought(server, m, buyBody({ itemId: sold!, maxPrice: 3 }))
    await pollUntil("the sold item delisted", async () => {
      const ids = await listedIds(server, m, name)
      return ids.length === 1 ? ids : undefined
    }).then((ids) => expect(ids).toEqual([stays]))
    // and it stays out after the purchase ends, whatever the outcome
    const failed = await loadItem(server, 300, { market_hash_name: name })
    const res = await bought(server, m, buyBody({ itemId: failed, maxPrice: 3, token: TOKENS.private }))
    await watchPurchase(server, m, res.purchase_id)
    await pollUntil("the refunded item delisted", async () => {
      const ids = await listedIds(server, m, name)
      return ids.length === 1 ? ids : undefined
    }).then((ids) => expect(ids).toEqual([stays]))
    expectError(await buy(server, m, buyBody({ itemId: failed, maxPrice: 3 })), 409, "MERCHANT_ITEM_UNAVAILABLE")
  })

  it("/buy-sync one after another: each is acknowledged within its wait, every step taken when it falls due", async () => {
    // the provider acknowledges 20-60 ms after pickup here (SIM_TIME_SCALE 0.02) and the wait is 2 s:
    // a 202 means the worker let a due step wait (its claimer once forgot a step announced while it
    // idled, and slept its whole idle wait)
    const m = await fundedMerchant(server, 10_000)
    const itemIds = await loadItems(server, Array.from({ length: 15 }, () => itemOf(100)))
    const statuses: Array<number> = []
    for (const itemId of itemIds) statuses.push((await buy(server, m, buyBody({ itemId, maxPrice: 1 }), "/buy-sync")).status)
    expect(statuses).toEqual(itemIds.map(() => 200))
  })

  it("a new purchase is handed to the worker of the process that bought it (its purchase-handover fiber beats)", async () => {
    const decodeFiberList = Schema.decodeUnknownSync(Schema.Struct({
      fibers: Schema.Array(Schema.Struct({ name: Schema.String, state: Schema.String, last_heartbeat: Schema.NullOr(Schema.String) }))
    }))
    const handoverBeat = async () => {
      const res = await fetch(`${server.opsUrl}/ops/fibers`)
      const { fibers } = decodeFiberList(await res.json())
      const fiber = fibers.find((f) => f.name === "purchase-handover")
      expect(fiber?.state).toBe("running")
      return fiber?.last_heartbeat ?? null
    }
    const before = await handoverBeat()
    const m = await fundedMerchant(server, 10_000)
    const res = await bought(server, m, buyBody({ itemId: await loadItem(server, 250), maxPrice: 3 }))
    await pollUntil("the handover fiber's beat", async () => {
      const beat = await handoverBeat()
      return beat !== null && beat !== before ? beat : undefined
    }, 10_000)
    await pollUntil("the purchase stepped", async () => {
      const detail = await getPurchase(server, m, res.purchase_id)
      return detail.status !== "created" ? detail.status : undefined
    }, 10_000)
  })
})

describe("GET /purchases (spec 4.3)", () => {
  let m: Merchant
  let other: Merchant
  /** Oldest first: [customId, token, partner]. */
  const plan = [
    ["list-1", "abcd1234", 111],
    ["list-2", TOKENS.private, 222],
    ["list-3", "abcd1234", 111],
    ["list-4", TOKENS.badtoken, 222],
    ["list-5", "abcd1234", 333]
  ] as const
  const made: Array<Detail> = []

  beforeAll(async () => {
    m = await fundedMerchant(server, 10_000)
    other = await fundedMerchant(server, 10_000)
    const ids = await loadItems(server, plan.map(() => itemOf(100)))
    for (let i = 0; i < plan.length; i++) {
      const [customId, token, partner] = plan[i]!
      const created = await bought(server, m, buyBody({ itemId: ids[i]!, maxPrice: 1, customId, token, partner }))
      made.push((await watchPurchase(server, m, created.purchase_id)).final)
      await sleep(15) // distinct created_at milliseconds
    }
    await bought(server, other, buyBody({ itemId: await loadItem(server, 100), maxPrice: 1, customId: "list-1", partner: 111 }))
  })

  const ids = (list: ReadonlyArray<Detail>) => list.map((p) => p.purchase_id)
  const newestFirst = () => [...made].reverse()

  it("lists newest first, each entry as GET one shows it", async () => {
    const all = await listPurchases(server, m)
    expect(ids(all)).toEqual(ids(newestFirst()))
    for (const p of all) expect(p).toEqual(await getPurchase(server, m, p.purchase_id))
    const times = all.map((p) => Date.parse(p.created_at))
    expect([...times].sort((a, b) => b - a)).toEqual(times)
  })

  it("filters by status, custom_id, target_steam_id and a created_at window", async () => {
    expect(ids(await listPurchases(server, m, { status: "completed" }))).toEqual(ids(newestFirst().filter((p) => p.status === "completed")))
    expect(ids(await listPurchases(server, m, { status: "failed" }))).toEqual([made[3]!.purchase_id, made[1]!.purchase_id])
    for (const status of IN_FLIGHT_STATUSES) expect(await listPurchases(server, m, { status })).toEqual([])
    expect(ids(await listPurchases(server, m, { custom_id: "list-3" }))).toEqual([made[2]!.purchase_id])
    expect(await listPurchases(server, m, { custom_id: "list-" })).toEqual([])
    expect(ids(await listPurchases(server, m, { target_steam_id: steamIdOf(222) }))).toEqual([made[3]!.purchase_id, made[1]!.purchase_id])
    expect(ids(await listPurchases(server, m, { target_steam_id: steamIdOf(111), status: "completed" }))).toEqual(
      [made[2]!.purchase_id, made[0]!.purchase_id]
    )
    const from = made[1]!.created_at
    const to = made[3]!.created_at
    expect(ids(await listPurchases(server, m, { from }))).toEqual(ids(newestFirst().slice(0, 4)))
    // a window whose ends are the created_at values the API reports holds both end purchases
    const inclusive = "to equal to a reported created_at includes that purchase (compared at the precision created_at is reported in)"
    expect(ids(await listPurchases(server, m, { from, to })), inclusive).toEqual(
      [made[3]!.purchase_id, made[2]!.purchase_id, made[1]!.purchase_id]
    )
    expect(ids(await listPurchases(server, m, { to })), inclusive).toEqual(ids(newestFirst().slice(1)))
    const future = new Date(Date.now() + 3_600_000).toISOString()
    expect(await listPurchases(server, m, { from: future })).toEqual([])
  })

  it("pages with an opaque cursor until next_cursor is null", async () => {
    for (const [limit, query] of [[1, {}], [2, {}], [4, {}], [1, { status: "completed" }]] as const) {
      const seen: Array<string> = []
      let cursor: string | null = null
      for (let page = 0; page < 10; page++) {
        const res: { purchases: ReadonlyArray<Detail>; next_cursor: string | null } = await server.merchant(m.apiKey).call((client) =>
          client.purchases.listPurchases({ urlParams: { limit, ...query, ...(cursor !== null ? { cursor } : {}) } })
        )
        expect(res.purchases.length).toBeLessThanOrEqual(limit)
        seen.push(...res.purchases.map((p) => p.purchase_id))
        cursor = res.next_cursor
        if (cursor === null) break
        expect(res.purchases.length).toBe(limit)
      }
      expect(cursor).toBeNull()
      expect(seen).toEqual(ids(await listPurchases(server, m, query)))
    }
  })

  it("rejects an unknown status, a bad limit and a malformed cursor", async () => {
    for (const status of ["pending", "COMPLETED", "sending", ""]) {
      expectError(await server.api(`/purchases?status=${status}`, { key: m.apiKey }), 400, "MERCHANT_INVALID_STATUS")
    }
    for (const q of ["limit=0", "limit=201", "limit=abc", "cursor=!!!", "cursor=bm90LWEtY3Vyc29y", "from=yesterday"]) {
      expectError(await server.api(`/purchases?${q}`, { key: m.apiKey }), 400, "MERCHANT_INVALID_QUERY")
    }
  })

  it("isolates merchants: another merchant's purchase is 404, and a non-uuid id is 404", async () => {
    const mine = made[0]!.purchase_id
    expectError(await server.api(`/purchases/${mine}`, { key: other.apiKey }), 404, "MERCHANT_PURCHASE_NOT_FOUND")
    expectError(await server.api(`/purchases/${randomUUID()}`, { key: m.apiKey }), 404, "MERCHANT_PURCHASE_NOT_FOUND")
    expectError(await server.api("/purchases/not-a-uuid", { key: m.apiKey }), 404, "MERCHANT_PURCHASE_NOT_FOUND")
    const theirs = await listPurchases(server, other)
    expect(theirs).toHaveLength(1)
    expect(isUuid(theirs[0]!.purchase_id)).toBe(true)
    expect(ids(theirs)).not.toContain(mine)
    // the same custom_id in two merchants is two purchases
    expect(ids(await listPurchases(server, other, { custom_id: "list-1" }))).toEqual(ids(theirs))
    expect(ids(await listPurchases(server, m, { custom_id: "list-1" }))).toEqual([mine])
  })
})
