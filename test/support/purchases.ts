/**
 * Purchase helpers of the black-box tests (spec 2.2, 3.1, 4.3, 4.4; CONTRACT 5): exact funding
 * through the deposit commission, items loaded through the admin API, the purchase requests, and
 * bounded polling of a purchase until a condition holds. The settings, money, trade URLs and request
 * bodies are in purchase-requests.ts (also used by the chaos command, which runs without the test
 * runner), the shapes of the answers and the reads of purchases in purchase-answers.ts; both are
 * exported from here too.
 */
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import { expect } from "vitest"
import { CatalogueItems } from "../../src/Ops/AdminApi.js"
import { expectUsd } from "./expectations.js"
import { pollUntil } from "./polling.js"
import { type Detail, getPurchase, isTerminal, listPurchases } from "./purchase-answers.js"
import { cents, itemOf, type Merchant, type PurchaseItemInput, sentCentsFor, TOKENS } from "./purchase-requests.js"
import type { RunningServer } from "./server.js"

export { pollUntil, sleep } from "./polling.js"
export * from "./purchase-answers.js"
export * from "./purchase-requests.js"

// ---- money -------------------------------------------------------------------------------------

export interface BalanceCents {
  readonly available: number
  readonly onHold: number
  readonly totalDeposited: number
  readonly totalSpent: number
}

/** GET /balance in cents, with the invariants every moment must satisfy (CONTRACT 6). */
export const balanceOf = async (server: RunningServer, m: Merchant): Promise<BalanceCents> => {
  const balance = await server.merchant(m.apiKey).call((client) => client.balance.getBalance())
  const shown = JSON.stringify(balance)
  for (const k of ["available", "on_hold", "total_deposited", "total_spent"] as const) {
    expectUsd(balance[k])
    expect(balance[k], k).toBeGreaterThanOrEqual(0)
  }
  const b = {
    available: cents(balance.available),
    onHold: cents(balance.on_hold),
    totalDeposited: cents(balance.total_deposited),
    totalSpent: cents(balance.total_spent)
  }
  expect(b.available + b.totalSpent, `available + total_spent = total_deposited in ${shown}`).toBe(b.totalDeposited)
  expect(b.onHold, `on_hold is part of total_spent in ${shown}`).toBeLessThanOrEqual(b.totalSpent)
  return b
}

/** Credits exactly `amountCents` to the merchant through the real deposit path. */
export const fund = async (server: RunningServer, m: Merchant, amountCents: number) => {
  const deposit = await server.deposit(m.id, sentCentsFor(amountCents) / 100, `tx-${randomUUID()}`)
  expect(cents(deposit.amount)).toBe(amountCents)
}

/** A new merchant credited with exactly `amountCents` (none when 0). */
export const fundedMerchant = async (server: RunningServer, amountCents: number): Promise<Merchant> => {
  const m = await server.createMerchant()
  if (amountCents > 0) await fund(server, m, amountCents)
  return { id: m.id, apiKey: m.apiKey }
}

// ---- catalogue ---------------------------------------------------------------------------------

/**
 * PUT /admin/catalogue/items; the ids, in order. The items are read by the admin schema first
 * (its defaults filled in), as the typed client sends its decoded Type.
 */
export const loadItems = async (server: RunningServer, items: ReadonlyArray<PurchaseItemInput>): Promise<Array<string>> => {
  const payload = Schema.decodeUnknownSync(CatalogueItems)({ items })
  const res = await server.adminApi.call((client) => client.catalogue.upsertItems({ payload }))
  expect(res.upserted).toBe(items.length)
  expect(res.ids).toHaveLength(items.length)
  return [...res.ids]
}

export const loadItem = async (server: RunningServer, priceCents: number, extra: Partial<PurchaseItemInput> = {}) =>
  (await loadItems(server, [itemOf(priceCents, extra)]))[0]!

/** Ids of the live items of a name (GET /items, all pages). */
export const listedIds = async (server: RunningServer, m: Merchant, name: string): Promise<Array<string>> => {
  const ids: Array<string> = []
  let cursor: string | null = null
  for (let page = 0; page < 50; page++) {
    const page: { items: ReadonlyArray<{ id: string }>; next_cursor: string | null } = await server.merchant(m.apiKey).call((client) =>
      client.catalogue.listItems({ urlParams: { market_hash_name: name, limit: 200, ...(cursor !== null ? { cursor } : {}) } })
    )
    ids.push(...page.items.map((i) => i.id))
    cursor = page.next_cursor
    if (cursor === null) return ids
  }
  throw new Error("item pagination did not end")
}

/** Waits until GET /items lists every one of `ids` under `name` (buy-by-name picks from the live index); the ids listed. */
export const untilListed = (server: RunningServer, m: Merchant, name: string, ids: ReadonlyArray<string>) =>
  pollUntil(`${ids.length} items of ${name} listed`, async () => {
    const seen = await listedIds(server, m, name)
    return ids.every((id) => seen.includes(id)) ? seen : undefined
  })

// ---- requests ----------------------------------------------------------------------------------

export const buy = (server: RunningServer, m: Merchant, body: unknown, path: "/buy" | "/buy-sync" = "/buy") =>
  server.api(path, { method: "POST", key: m.apiKey, body })

export const buyByName = (server: RunningServer, m: Merchant, body: unknown) => server.api("/buy-by-name", { method: "POST", key: m.apiKey, body })

// ---- polling -----------------------------------------------------------------------------------

/**
 * GET /balance once nothing of the merchant is on hold: every purchase has been delivered, refunded
 * or settled, so the purchase worker moves no more of its money and the balance can be compared whole
 * with a later read. Not for merchants with purchases of the reversal tokens (`revbuyer`,
 * `revselr0`, an item's `sim.reversal`): those change the balance after on_hold is back to 0.
 */
export const settledBalanceOf = (server: RunningServer, m: Merchant): Promise<BalanceCents> =>
  pollUntil(`nothing on hold for merchant ${m.id}`, async () => {
    const b = await balanceOf(server, m)
    return b.onHold === 0 ? b : undefined
  })

/** The ids of every purchase of a merchant, sorted: what a request could add, whatever their statuses. */
export const purchaseIds = async (server: RunningServer, m: Merchant): Promise<Array<string>> =>
  (await listPurchases(server, m)).map((p) => p.purchase_id).sort()

/** Statuses allowed to follow each other, in order (spec 3.1; a reversal turns completed into failed). */
const ORDER: Record<string, number> = { created: 0, processing: 1, sent_to_steam: 2, completed: 3, failed: 4 }

export interface Observed {
  readonly final: Detail
  /** Distinct statuses in the order they were seen. */
  readonly path: ReadonlyArray<string>
}

/**
 * Polls GET /purchases/{id} until `done` holds, checking on every read that the status only moves
 * forward, that a known trade_offer_id is never erased or changed, that completed_at once set stays
 * and that the price never changes.
 */
export const watchPurchase = async (
  server: RunningServer,
  m: Merchant,
  id: string,
  done: (d: Detail) => boolean = (d) => isTerminal(d.status),
  timeoutMs = 90_000
): Promise<Observed> => {
  const path: Array<string> = []
  let offer: string | null = null
  let completedAt: string | null = null
  let price: number | undefined
  const final = await pollUntil(
    `purchase ${id}`,
    async () => {
      const d = await getPurchase(server, m, id)
      const last = path[path.length - 1]
      if (last !== d.status) {
        if (last !== undefined) expect(ORDER[d.status]!, `${last} -> ${d.status}`).toBeGreaterThan(ORDER[last]!)
        path.push(d.status)
      }
      if (offer !== null) expect(d.trade_offer_id, "a known trade_offer_id is never erased").toBe(offer)
      offer = d.trade_offer_id
      if (completedAt !== null) expect(d.completed_at).toBe(completedAt)
      completedAt = d.completed_at
      if (price !== undefined) expect(d.price).toBe(price)
      price = d.price
      return done(d) ? d : undefined
    },
    timeoutMs,
    25
  )
  return { final, path }
}

/** Waits until every purchase of the merchant is settled: terminal, and reversal tokens reversed. */
export const settled = (tokenOf: (d: Detail) => string | undefined) => (d: Detail) => {
  const token = tokenOf(d)
  if (token === TOKENS.revbuyer || token === TOKENS.revseller) return d.status === "failed"
  return isTerminal(d.status)
}
