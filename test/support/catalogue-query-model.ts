/**
 * The model GET /items and GET /items/search are checked against (spec 4.2): the order by (price,
 * id), which items a query's filters match, and generated queries whose price bounds are written in
 * any of their spellings (12.5, 12.50, 12.500) from an exact number of mills.
 */
import * as fc from "fast-check"
import type { ListParams } from "../../src/Catalogue/Api.js"
import { CATEGORIES, EXTERIORS, type Item, NAMES, RARITIES } from "./catalogue.js"

/** An item's price in integer cents. */
export const itemCents = (item: Item) => Math.round(item.price * 100)

/** The list's order: price ascending, then id. */
export const byPriceId = (a: Item, b: Item) => itemCents(a) - itemCents(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** A USD query bound, written from an exact number of mills (tenths of a cent). */
export interface PriceBound {
  readonly mills: number
  readonly text: string
}
export const priceBoundArb: fc.Arbitrary<PriceBound> = fc.oneof(
  fc.integer({ min: 0, max: 10_000_000_0 }),
  // near the common prices: exactly on them and a mill either side
  fc.constantFrom(10, 990, 1000, 2500, 19990, 1_000_000).chain((m) => fc.constantFrom(m - 1, m, m + 1))
).chain((mills) => {
  const whole = Math.floor(mills / 1000)
  const frac = String(mills % 1000).padStart(3, "0")
  const texts = [`${whole}.${frac}`]
  if (mills % 10 === 0) texts.push(`${whole}.${frac.slice(0, 2)}`)
  if (mills % 1000 === 0) texts.push(String(whole))
  return fc.constantFrom(...texts).map((text) => ({ mills, text }))
})

/** A float query bound: the exterior boundaries, and any number in [0, 1]. */
export const floatBoundArb = fc.oneof(fc.constantFrom(0, 0.07, 0.15, 0.5, 1), fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (x === 0 ? 0 : x)))

/** `arb`, or (`weight` times as often) undefined: a query parameter that is mostly left out. */
export const sometimes = <A>(arb: fc.Arbitrary<A>, weight = 3) => fc.oneof({ weight, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb })

/** A GET /items query as generated, its price bounds with their exact value and spelling. */
export interface ListQuery {
  readonly market_hash_name?: string | undefined
  readonly min_price?: PriceBound | undefined
  readonly max_price?: PriceBound | undefined
  readonly category?: string | undefined
  readonly exterior?: string | undefined
  readonly rarity?: string | undefined
  readonly min_float?: number | undefined
  readonly max_float?: number | undefined
  readonly delivery_type?: string | undefined
  readonly sort?: "price_asc" | "price_desc" | undefined
  readonly limit?: number | undefined
}

export const listQueryArb: fc.Arbitrary<ListQuery> = fc.record({
  market_hash_name: sometimes(fc.constantFrom(...NAMES, "No Such Item")),
  min_price: sometimes(priceBoundArb),
  max_price: sometimes(priceBoundArb),
  category: sometimes(fc.constantFrom(...CATEGORIES, "gloves")),
  exterior: sometimes(fc.constantFrom(...EXTERIORS.map((e) => e[0]), "Well-Worn")),
  rarity: sometimes(fc.constantFrom(...RARITIES.map((r) => r[0]), "Contraband")),
  min_float: sometimes(floatBoundArb),
  max_float: sometimes(floatBoundArb),
  // unknown values are ignored (spec 4.2)
  delivery_type: sometimes(fc.constantFrom("instant", "manual", "unknown", "INSTANT", "")),
  sort: sometimes(fc.constantFrom("price_asc" as const, "price_desc" as const), 1),
  limit: sometimes(fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 12 })), 1)
})

/** Whether an item matches a query's filters (a delivery_type other than instant or manual is ignored). */
export const matches = (item: Item, q: Omit<ListQuery, "sort" | "limit">) =>
  (q.market_hash_name === undefined || item.market_hash_name === q.market_hash_name) &&
  (q.min_price === undefined || itemCents(item) * 10 >= q.min_price.mills) &&
  (q.max_price === undefined || itemCents(item) * 10 <= q.max_price.mills) &&
  (q.category === undefined || item.category === q.category) &&
  (q.exterior === undefined || item.exterior === q.exterior) &&
  (q.rarity === undefined || item.rarity === q.rarity) &&
  (q.min_float === undefined || (item.float !== null && item.float >= q.min_float)) &&
  (q.max_float === undefined || (item.float !== null && item.float <= q.max_float)) &&
  (q.delivery_type !== "instant" && q.delivery_type !== "manual" ? true : item.delivery_type === q.delivery_type)

/** A query string as written, the undefined parameters left out (empty when none is left). */
export const queryString = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) search.set(k, String(v))
  const s = search.toString()
  return s === "" ? "" : `?${s}`
}

/** The typed client's query of GET /items (its decoded Type). */
export type ListUrlParams = typeof ListParams.Type

/** A generated query as GET /items parameters, the price bounds in their spelling. */
export const listParams = (q: ListQuery) => ({
  market_hash_name: q.market_hash_name,
  min_price: q.min_price?.text,
  max_price: q.max_price?.text,
  category: q.category,
  exterior: q.exterior,
  rarity: q.rarity,
  min_float: q.min_float,
  max_float: q.max_float,
  delivery_type: q.delivery_type,
  sort: q.sort,
  limit: q.limit
})
