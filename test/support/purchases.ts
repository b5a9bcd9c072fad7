/**
 * Purchase helpers of the black-box tests (spec 2.2, 2.8 to 2.10, 3.1, 4.3, 4.4; CONTRACT 5):
 * exact funding through the deposit commission, items loaded through the admin API, the shapes of
 * the answers, and bounded polling of a purchase until a condition holds. The settings, money,
 * trade URLs and request bodies are in purchase-requests.ts (also used by the chaos command, which
 * runs without the test runner) and are exported from here too.
 */
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import { expect } from "vitest"
import { CatalogueItems } from "../../src/Ops/AdminApi.js"
import { PurchaseCreated, PurchaseDetail, PurchaseFailedResponse, type PurchaseList, type PurchaseListQuery } from "../../src/Purchases/Api.js"
import { bodyOf, expectUsd, field, ISO_UTC, isUuid } from "./expectations.js"
import { pollUntil } from "./polling.js"
import { type buyBody, cents, itemOf, type Merchant, type PurchaseItemInput, sentCentsFor, TOKENS } from "./purchase-requests.js"
import type { JsonResponse, RunningServer } from "./server.js"

export { pollUntil, sleep } from "./polling.js"
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

// ---- requests ----------------------------------------------------------------------------------

export const buy = (server: RunningServer, m: Merchant, body: unknown, path: "/buy" | "/buy-sync" = "/buy") =>
  server.api(path, { method: "POST", key: m.apiKey, body })

export const buyByName = (server: RunningServer, m: Merchant, body: unknown) => server.api("/buy-by-name", { method: "POST", key: m.apiKey, body })

// ---- response shapes ---------------------------------------------------------------------------

export const STATUSES = ["created", "processing", "sent_to_steam", "completed", "failed"] as const
export const IN_FLIGHT_STATUSES = ["created", "processing", "sent_to_steam"] as const
export const IN_FLIGHT: ReadonlyArray<string> = IN_FLIGHT_STATUSES
export const isTerminal = (status: string) => status === "completed" || status === "failed"

export type Created = {
  purchase_id: string
  custom_id: string
  status: string
  item: { market_hash_name: string; price: number; delivery_type: string; estimated_delivery_minutes: number | null }
  balance_after: number
  created_at: string
}

/** PurchaseCreated (spec 2.8): exactly its fields. */
export const expectPurchaseCreated = (res: JsonResponse, status: number) => {
  expect(res.status, res.text).toBe(status)
  return expectCreatedShape(bodyOf(res, PurchaseCreated))
}

/** A decoded PurchaseCreated body (a raw answer's or the typed client's): exactly its fields, USD amounts, an ISO time. */
export const expectCreatedShape = (body: typeof PurchaseCreated.Type): Created => {
  expect(Object.keys(body).sort()).toEqual(["balance_after", "created_at", "custom_id", "item", "purchase_id", "status"])
  expect(Object.keys(body.item).sort()).toEqual(["delivery_type", "estimated_delivery_minutes", "market_hash_name", "price"])
  expect(isUuid(body.purchase_id)).toBe(true)
  expect(STATUSES).toContain(body.status)
  expectUsd(body.item.price)
  expectUsd(body.balance_after)
  expect(body.balance_after).toBeGreaterThanOrEqual(0)
  expect(body.created_at).toMatch(ISO_UTC)
  return body
}

/** POST /buy with a valid body through the typed client: the 201 PurchaseCreated, its shape checked. */
export const bought = async (server: RunningServer, m: Merchant, body: ReturnType<typeof buyBody>): Promise<Created> =>
  expectCreatedShape(await server.merchant(m.apiKey).call((client) => client.purchases.buy({ payload: body })))

/** The purchase_id of an answer that names a purchase (PurchaseCreated or PurchaseFailedResponse, whichever came). */
export const purchaseIdOf = (res: JsonResponse): string => {
  const id = field(res.json, "purchase_id")
  if (typeof id !== "string" || !isUuid(id)) throw new Error(`no purchase_id in the ${res.status} answer: ${res.text.slice(0, 2_000)}`)
  return id
}

/** PurchaseFailedResponse (spec 2.10): the Error body plus the failed purchase. */
export const expectPurchaseFailed = (res: JsonResponse, errorCode: string, failureCode: string) => {
  expect(res.status, res.text).toBe(409)
  const body = bodyOf(res, Schema.encodedSchema(PurchaseFailedResponse))
  expect(Object.keys(body).sort()).toEqual(["custom_id", "error", "failure", "purchase_id", "trade_offer_id", "trade_offer_url"])
  expect(Object.keys(body.error).sort()).toEqual(["code", "message"])
  expect(body.error.code).toBe(errorCode)
  expect(typeof body.error.message).toBe("string")
  expect(isUuid(body.purchase_id)).toBe(true)
  expect(body.failure.code).toBe(failureCode)
  expect(typeof body.failure.message).toBe("string")
  expect(body.trade_offer_id === null || typeof body.trade_offer_id === "string").toBe(true)
  expect(body.trade_offer_url === null || typeof body.trade_offer_url === "string").toBe(true)
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
  return body
}

export interface Detail {
  purchase_id: string
  custom_id: string
  status: string
  item: {
    id: string | null
    market_hash_name: string
    image_url: string | null
    exterior: string | null
    float: number | null
    delivery_type: string
    estimated_delivery_minutes: number | null
  }
  price: number
  target_steam_id: string | null
  trade_offer_id: string | null
  trade_offer_url: string | null
  created_at: string
  completed_at: string | null
  failure: { code: string; message: string; refunded_amount: number | null } | null
}

/** PurchaseDetail (spec 2.9): exactly its fields; `item` has no price. */
export const expectDetailShape = (d: typeof PurchaseDetail.Type): Detail => {
  expect(Object.keys(d).sort()).toEqual([
    "completed_at",
    "created_at",
    "custom_id",
    "failure",
    "item",
    "price",
    "purchase_id",
    "status",
    "target_steam_id",
    "trade_offer_id",
    "trade_offer_url"
  ])
  expect(Object.keys(d.item).sort()).toEqual(
    ["delivery_type", "estimated_delivery_minutes", "exterior", "float", "id", "image_url", "market_hash_name"]
  )
  expect(STATUSES).toContain(d.status)
  expectUsd(d.price)
  expect(d.created_at).toMatch(ISO_UTC)
  if (d.completed_at !== null) expect(d.completed_at).toMatch(ISO_UTC)
  if (d.status === "failed") {
    expect(d.failure).not.toBeNull()
    expect(Object.keys(d.failure ?? {}).sort()).toEqual(["code", "message", "refunded_amount"])
    if (d.failure?.refunded_amount != null) expectUsd(d.failure.refunded_amount)
  } else {
    expect(d.failure).toBeNull()
  }
  return d
}

/** GET /purchases/{id} through the typed client (decoded by PurchaseDetail), then its shape. */
export const getPurchase = async (server: RunningServer, m: Merchant, id: string): Promise<Detail> =>
  expectDetailShape(await server.merchant(m.apiKey).call((client) => client.purchases.getPurchase({ path: { purchaseId: id } })))

/** The filters of GET /purchases (the list's decoded query, without the paging). */
export type PurchaseQuery = Omit<typeof PurchaseListQuery.Type, "cursor" | "limit">

/** Every purchase of a query (all pages, following next_cursor). */
export const listPurchases = async (server: RunningServer, m: Merchant, query: PurchaseQuery = {}): Promise<Array<Detail>> => {
  const out: Array<Detail> = []
  let cursor: string | null = null
  for (let page = 0; page < 200; page++) {
    const list: typeof PurchaseList.Type = await server.merchant(m.apiKey).call((client) =>
      client.purchases.listPurchases({ urlParams: { limit: 200, ...query, ...(cursor !== null ? { cursor } : {}) } })
    )
    expect(Object.keys(list).sort()).toEqual(["next_cursor", "purchases"])
    out.push(...list.purchases.map(expectDetailShape))
    cursor = list.next_cursor
    if (cursor === null) return out
  }
  throw new Error("purchase pagination did not end")
}

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
