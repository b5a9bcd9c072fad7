/**
 * What the merchant API answers about purchases (spec 2.8 to 2.10, 3.1, 4.3): the statuses, the
 * exact shapes of PurchaseCreated, PurchaseFailedResponse and PurchaseDetail, and the reads of one
 * purchase and of every page of GET /purchases, each checked for its shape.
 */
import { Schema } from "effect"
import { expect } from "vitest"
import { PurchaseCreated, PurchaseDetail, PurchaseFailedResponse, type PurchaseList, type PurchaseListQuery } from "../../src/Purchases/Api.js"
import { bodyOf, expectUsd, field, ISO_UTC, isUuid } from "./expectations.js"
import type { buyBody, Merchant } from "./purchase-requests.js"
import type { JsonResponse, RunningServer } from "./server.js"

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
