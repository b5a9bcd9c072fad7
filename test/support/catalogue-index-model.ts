/**
 * The model CatalogueIndex (src/Catalogue/Index.ts) is checked against: generated entries (prices
 * that tie, ids that share a prefix, the lowest and highest uuids), filters, sorts and page sizes; a
 * naive filter + sort by (price, id) and the page it must give; and worlds of initial entries with
 * upserts and removes between pages, applied to the index and to a plain map alike.
 */
import * as fc from "fast-check"
import { expect } from "vitest"
import type { Entry } from "../../src/Catalogue/Entry.js"
import { CatalogueIndex, type ListFilters, type SortOrder } from "../../src/Catalogue/Index.js"
import { compareKeys, type Keyed } from "../../src/Catalogue/SortedList.js"

const NAMES = ["AK-47 | Redline (Field-Tested)", "ak-47 | redline (field-tested)", "AWP | Asiimov", "★ Karambit | Fade", "Case"]
export const CATEGORIES = ["rifle", "knife", "sticker", "case"]
const EXTERIORS = ["Factory New", "Minimal Wear", "Field-Tested", "Battle-Scarred"]
const RARITIES = ["Covert", "Classified", "Mil-Spec Grade"]
const FLOATS = [0, 0.07, 0.15, 0.38, 0.5, 1]
export const LOWEST_ID = "00000000-0000-0000-0000-000000000000"
export const HIGHEST_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"

/** Some ids share their first 13 characters (CatalogueIndex.bulk orders by them first, then by the whole id). */
export const idArb = fc.oneof(
  { weight: 8, arbitrary: fc.uuid() },
  { weight: 2, arbitrary: fc.uuid().map((id) => `7fffabcd-0123${id.slice(13)}`) },
  { weight: 1, arbitrary: fc.constantFrom(LOWEST_ID, HIGHEST_ID) }
)
const nullableFrom = <A>(values: ReadonlyArray<A>) =>
  fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 3, arbitrary: fc.constantFrom(...values) })
const floatArb = fc.oneof(
  fc.constant(null),
  fc.constantFrom(...FLOATS),
  fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (x === 0 ? 0 : x))
)

/** An entry for a given id (prices in a small range so that many tie and ids break the ties). */
export const entryArb = (id: string): fc.Arbitrary<Entry> =>
  fc.record({
    price: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 12 }) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 10_000_000 }) }),
    name: fc.constantFrom(...NAMES),
    category: nullableFrom(CATEGORIES),
    exterior: nullableFrom(EXTERIORS),
    rarity: nullableFrom(RARITIES),
    float: floatArb,
    delivery: fc.constantFrom("instant" as const, "manual" as const),
    minutes: fc.option(fc.integer({ min: 0, max: 120 }), { nil: null })
  }).map((fields) => ({ id, json: JSON.stringify({ id, ...fields }), ...fields }))

/** Each filter is present one time in seven (price bounds one in two), so that pages are usually not empty. */
const sometimes = <A>(arb: fc.Arbitrary<A>) => fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb })
const filtersArb: fc.Arbitrary<ListFilters> = fc.record({
  marketHashName: sometimes(fc.constantFrom(...NAMES, "absent name")),
  minPrice: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, fc.integer({ min: 0, max: 14 }), fc.integer({ min: 0, max: 10_000_001 })),
  maxPrice: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, fc.integer({ min: 0, max: 14 }), fc.integer({ min: 0, max: 10_000_001 })),
  category: sometimes(fc.constantFrom(...CATEGORIES, "gloves")),
  exterior: sometimes(fc.constantFrom(...EXTERIORS, "Well-Worn")),
  rarity: sometimes(fc.constantFrom(...RARITIES, "Contraband")),
  minFloat: sometimes(fc.oneof(fc.constantFrom(...FLOATS), fc.double({ min: 0, max: 1, noNaN: true }))),
  maxFloat: sometimes(fc.oneof(fc.constantFrom(...FLOATS), fc.double({ min: 0, max: 1, noNaN: true }))),
  delivery: sometimes(fc.constantFrom("instant" as const, "manual" as const)),
  maxMinutes: sometimes(fc.integer({ min: 0, max: 130 }))
})

const sortArb = fc.constantFrom<SortOrder>("price_asc", "price_desc")
const limitArb = fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 60 }))

// ---- the naive model -------------------------------------------------------------------------

const matches = (e: Entry, f: ListFilters) =>
  (f.marketHashName === undefined || e.name === f.marketHashName) &&
  (f.minPrice === undefined || e.price >= f.minPrice) &&
  (f.maxPrice === undefined || e.price <= f.maxPrice) &&
  (f.category === undefined || e.category === f.category) &&
  (f.exterior === undefined || e.exterior === f.exterior) &&
  (f.rarity === undefined || e.rarity === f.rarity) &&
  (f.minFloat === undefined || (e.float !== null && e.float >= f.minFloat)) &&
  (f.maxFloat === undefined || (e.float !== null && e.float <= f.maxFloat)) &&
  (f.delivery === undefined || e.delivery === f.delivery) &&
  (f.maxMinutes === undefined || (e.minutes !== null && e.minutes <= f.maxMinutes))

/** Every match in the sort's order, strictly after `after` when given. */
export const naive = (model: ReadonlyMap<string, Entry>, f: ListFilters, sort: SortOrder, after?: Keyed) => {
  const sign = sort === "price_asc" ? 1 : -1
  return Array.from(model.values())
    .filter((e) => matches(e, f))
    .filter((e) => after === undefined || sign * compareKeys(e, after) > 0)
    .sort((a, b) => sign * compareKeys(a, b))
}

export const keyText = (k: Keyed) => `${k.price}|${k.id}`

/** The page the index must answer: the first `limit` of the naive list, `next` iff more exist. */
export const expectPage = (
  index: CatalogueIndex,
  model: ReadonlyMap<string, Entry>,
  f: ListFilters,
  sort: SortOrder,
  after: Keyed | undefined,
  limit: number
) => {
  const page = index.page(f, sort, after, limit)
  const all = naive(model, f, sort, after)
  expect(page.entries.map(keyText)).toEqual(all.slice(0, limit).map(keyText))
  // the very entries (fields and bytes), not only their keys
  expect(page.entries).toEqual(all.slice(0, limit))
  if (all.length > limit) expect(page.next).toBe(page.entries[page.entries.length - 1])
  else expect(page.next).toBeUndefined()
  return page
}

// ---- worlds: a pool of ids, the initial entries, mutations between pages -----------------------

export type Mutation = { readonly op: "upsert"; readonly entry: Entry } | { readonly op: "remove"; readonly id: string }

/** Random ids, often with the lowest and highest uuids (the price-bound sentinels) among them. */
const idsArb = fc.tuple(fc.uniqueArray(idArb, { minLength: 1, maxLength: 100, size: "max" }), fc.subarray([LOWEST_ID, HIGHEST_ID]))
  .map(([ids, edges]) => Array.from(new Set([...edges, ...ids])))
export const worldArb = idsArb.chain((ids) => {
  const someId = fc.constantFrom(...ids)
  const upsert = someId.chain(entryArb).map((entry): Mutation => ({ op: "upsert", entry }))
  const remove = someId.map((id): Mutation => ({ op: "remove", id }))
  return fc.record({
    initial: fc.array(upsert, { maxLength: 160, size: "max" }),
    steps: fc.array(fc.array(fc.oneof(upsert, remove), { maxLength: 6 }), { maxLength: 40, size: "max" }),
    filters: filtersArb,
    sort: sortArb,
    limit: limitArb
  })
})

export const applyTo = (index: CatalogueIndex, model: Map<string, Entry>, m: Mutation) => {
  if (m.op === "upsert") {
    index.upsert(m.entry)
    model.set(m.entry.id, m.entry)
  } else {
    expect(index.remove(m.id)).toBe(model.delete(m.id))
  }
  expect(index.size).toBe(model.size)
}

export const setUp = (initial: ReadonlyArray<Mutation>) => {
  const index = new CatalogueIndex()
  const model = new Map<string, Entry>()
  for (const m of initial) applyTo(index, model, m)
  return { index, model }
}
