/**
 * CatalogueIndex.page (src/Catalogue/Index.ts) against a naive filter + sort by (price, id):
 * random entries, random filters (name, price bounds in cents, category, exterior, rarity, float
 * bounds with null floats excluded, delivery, max minutes), both sorts, random page sizes; a
 * cursor walk visits every match once, in order; with random upserts and removes between pages
 * the keyset stays valid (nothing that stayed unchanged is skipped or repeated).
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type Entry, entryOf } from "../../src/Catalogue/Entry.js"
import { bucketOf, CatalogueIndex, type ListFilters, type SortOrder } from "../../src/Catalogue/Index.js"
import { compareKeys, type Keyed } from "../../src/Catalogue/SortedList.js"
import { serialise } from "../../src/Domain/CatalogItem.js"

const NAMES = ["AK-47 | Redline (Field-Tested)", "ak-47 | redline (field-tested)", "AWP | Asiimov", "★ Karambit | Fade", "Case"]
const CATEGORIES = ["rifle", "knife", "sticker", "case"]
const EXTERIORS = ["Factory New", "Minimal Wear", "Field-Tested", "Battle-Scarred"]
const RARITIES = ["Covert", "Classified", "Mil-Spec Grade"]
const FLOATS = [0, 0.07, 0.15, 0.38, 0.5, 1]
const LOWEST_ID = "00000000-0000-0000-0000-000000000000"
const HIGHEST_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"

/** Some ids share their first 13 characters (CatalogueIndex.bulk orders by them first, then by the whole id). */
const idArb = fc.oneof(
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
const entryArb = (id: string): fc.Arbitrary<Entry> =>
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
const naive = (model: ReadonlyMap<string, Entry>, f: ListFilters, sort: SortOrder, after?: Keyed) => {
  const sign = sort === "price_asc" ? 1 : -1
  return Array.from(model.values())
    .filter((e) => matches(e, f))
    .filter((e) => after === undefined || sign * compareKeys(e, after) > 0)
    .sort((a, b) => sign * compareKeys(a, b))
}

const keyText = (k: Keyed) => `${k.price}|${k.id}`

/** The page the index must answer: the first `limit` of the naive list, `next` iff more exist. */
const expectPage = (index: CatalogueIndex, model: ReadonlyMap<string, Entry>, f: ListFilters, sort: SortOrder, after: Keyed | undefined, limit: number) => {
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

type Mutation = { readonly op: "upsert"; readonly entry: Entry } | { readonly op: "remove"; readonly id: string }

/** Random ids, often with the lowest and highest uuids (the price-bound sentinels) among them. */
const idsArb = fc.tuple(fc.uniqueArray(idArb, { minLength: 1, maxLength: 100, size: "max" }), fc.subarray([LOWEST_ID, HIGHEST_ID]))
  .map(([ids, edges]) => Array.from(new Set([...edges, ...ids])))
const worldArb = idsArb.chain((ids) => {
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

const applyTo = (index: CatalogueIndex, model: Map<string, Entry>, m: Mutation) => {
  if (m.op === "upsert") {
    index.upsert(m.entry)
    model.set(m.entry.id, m.entry)
  } else {
    expect(index.remove(m.id)).toBe(model.delete(m.id))
  }
  expect(index.size).toBe(model.size)
}

const setUp = (initial: ReadonlyArray<Mutation>) => {
  const index = new CatalogueIndex()
  const model = new Map<string, Entry>()
  for (const m of initial) applyTo(index, model, m)
  return { index, model }
}

describe("CatalogueIndex.page", () => {
  it("the first page equals the naive filter + sort by (price, id), for any filters, sort and limit", () => {
    fc.assert(
      fc.property(worldArb, ({ initial, filters, sort, limit }) => {
        const { index, model } = setUp(initial)
        expectPage(index, model, filters, sort, undefined, limit)
        // and every other entry is still found by id
        for (const e of model.values()) expect(index.get(e.id)).toBe(e)
      }),
      { numRuns: 200 }
    )
  })

  it("a cursor walk visits every matching entry exactly once, in order", () => {
    fc.assert(
      fc.property(worldArb, ({ initial, filters, sort, limit }) => {
        const { index, model } = setUp(initial)
        const visited: Array<Entry> = []
        let after: Keyed | undefined
        for (let pages = 0;; pages++) {
          expect(pages).toBeLessThanOrEqual(model.size + 1)
          const page = expectPage(index, model, filters, sort, after, limit)
          visited.push(...page.entries)
          if (page.next === undefined) break
          expect(page.entries.length).toBe(limit)
          after = page.next
        }
        expect(visited).toEqual(naive(model, filters, sort))
      }),
      { numRuns: 200 }
    )
  })

  it("with upserts and removes between pages, every page is still the naive answer after the cursor and nothing unchanged is skipped or repeated", () => {
    fc.assert(
      fc.property(worldArb, ({ initial, steps, filters, sort, limit }) => {
        const { index, model } = setUp(initial)
        const before = new Map(model)
        const touched = new Set<string>()
        const visited: Array<Entry> = []
        let after: Keyed | undefined
        let step = 0
        for (let pages = 0;; pages++) {
          expect(pages).toBeLessThanOrEqual(before.size + steps.length * 6 + 1)
          const page = expectPage(index, model, filters, sort, after, limit)
          visited.push(...page.entries)
          if (page.next === undefined) break
          after = page.next
          for (const m of steps[step++] ?? []) {
            applyTo(index, model, m)
            touched.add(m.op === "upsert" ? m.entry.id : m.id)
          }
        }
        // keyset order: the walk's keys are strictly monotone, so no key is visited twice
        const sign = sort === "price_asc" ? 1 : -1
        for (let i = 1; i < visited.length; i++) expect(sign * compareKeys(visited[i]!, visited[i - 1]!)).toBeGreaterThan(0)
        // every entry that matched at the start and was never touched is visited exactly once
        const unchanged = naive(before, filters, sort).filter((e) => !touched.has(e.id))
        const seen = new Map<string, number>()
        for (const e of visited) seen.set(e.id, (seen.get(e.id) ?? 0) + 1)
        for (const e of unchanged) expect({ id: e.id, times: seen.get(e.id) ?? 0 }).toEqual({ id: e.id, times: 1 })
        // nothing is visited that never existed or did not match when visited (checked per page) and
        // an entry visited twice must have changed its key in between
        const keysById = new Map<string, Set<string>>()
        for (const e of visited) {
          const keys = keysById.get(e.id) ?? new Set()
          expect(keys.has(keyText(e))).toBe(false)
          keys.add(keyText(e))
          keysById.set(e.id, keys)
        }
      }),
      { numRuns: 200 }
    )
  })

  it("price bounds are inclusive at both ends and ties at a bound are all returned, in id order (lowest and highest ids too)", () => {
    const x = "11111111-1111-4111-8111-111111111111"
    const y = "99999999-9999-4999-8999-999999999999"
    const layouts: ReadonlyArray<ReadonlyArray<readonly [string, number]>> = [
      [[LOWEST_ID, 5], [HIGHEST_ID, 10], [x, 5], [y, 10]],
      [[HIGHEST_ID, 5], [LOWEST_ID, 10], [x, 10], [y, 5]]
    ]
    for (const layout of layouts) {
      const index = new CatalogueIndex()
      const model = new Map<string, Entry>()
      for (const [id, price] of layout) {
        const entry: Entry = { id, price, json: "{}", name: "n", category: null, exterior: null, rarity: null, float: null, delivery: "instant", minutes: null }
        index.upsert(entry)
        model.set(id, entry)
      }
      for (const sort of ["price_asc", "price_desc"] as const) {
        for (const limit of [1, 2, 3, 4, 5]) {
          for (const [minPrice, maxPrice] of [[5, 5], [10, 10], [5, 10], [6, 9], [0, 5], [10, 11]] as const) {
            const first = expectPage(index, model, { minPrice, maxPrice }, sort, undefined, limit)
            if (first.next !== undefined) expectPage(index, model, { minPrice, maxPrice }, sort, first.next, limit)
          }
        }
      }
    }
  })

  it("entryOf takes the filter fields from the item and keeps its bytes", () => {
    const item = {
      id: "3f1c2b9a-8d7e-4c6b-9a5f-0e1d2c3b4a59",
      market_hash_name: "AK-47 | Redline (Field-Tested)",
      image_url: null,
      price: 12.34,
      exterior: "Field-Tested",
      exterior_code: "FT",
      float: null,
      paint_seed: null,
      paint_index: null,
      inspect_url: null,
      asset_id: "123456789012345678901",
      steam_id: null,
      class_id: null,
      instance_id: null,
      is_stat_trak: false,
      is_souvenir: false,
      has_stickers: true,
      stickers_count: 0,
      stickers: [],
      category: "rifle",
      weapon_type: "Rifle",
      rarity: null,
      rarity_color: null,
      delivery_type: "manual" as const,
      estimated_delivery_minutes: 30
    }
    const json = serialise(item)
    const e = entryOf(item, 1234, json)
    expect(e).toEqual({
      id: item.id,
      price: 1234,
      json,
      name: item.market_hash_name,
      category: "rifle",
      exterior: "Field-Tested",
      rarity: null,
      float: null,
      delivery: "manual",
      minutes: 30
    })
    expect(JSON.parse(json)).toEqual(item)
  })

  it("an index built in bulk orders ids of another shape (upper case, no dash) as one built by upserts does", () => {
    const oddIdArb = fc.oneof(idArb, idArb.map((id) => id.toUpperCase()), idArb.map((id) => id.replace(/-/g, "")))
    fc.assert(
      fc.property(fc.uniqueArray(oddIdArb, { minLength: 1, maxLength: 60 }).chain((ids) => fc.tuple(...ids.map(entryArb))), (entries) => {
        const incremental = new CatalogueIndex()
        for (const entry of entries) incremental.upsert(entry)
        const bulk = CatalogueIndex.bulk(entries)
        const all = (index: CatalogueIndex) => index.page({}, "price_asc", undefined, 1_000).entries.map((e) => e.id)
        expect(all(bulk)).toEqual([...entries].sort(compareKeys).map((e) => e.id))
        expect(all(bulk)).toEqual(all(incremental))
        for (const category of CATEGORIES) {
          expect(bulk.page({ category }, "price_desc", undefined, 1_000).entries).toEqual(
            incremental.page({ category }, "price_desc", undefined, 1_000).entries
          )
        }
      })
    )
  })

  it("an index built in bulk (the load at start) answers every page like one built by upserts, and then changes alike", () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const upserts = world.initial.flatMap((m) => (m.op === "upsert" ? [m.entry] : []))
        const incremental = new CatalogueIndex()
        for (const entry of upserts) incremental.upsert(entry)
        const bulk = CatalogueIndex.bulk(upserts)
        const walk = (index: CatalogueIndex) => {
          const seen: Array<string> = []
          let after: Keyed | undefined
          for (;;) {
            const page = index.page(world.filters, world.sort, after, world.limit)
            seen.push(...page.entries.map((e) => e.id))
            if (page.next === undefined) return seen
            after = page.next
          }
        }
        expect(bulk.size).toBe(incremental.size)
        expect(walk(bulk)).toEqual(walk(incremental))
        for (const step of world.steps.flat()) {
          if (step.op === "upsert") {
            bulk.upsert(step.entry)
            incremental.upsert(step.entry)
          } else {
            expect(bulk.remove(step.id)).toBe(incremental.remove(step.id))
          }
        }
        expect(walk(bulk)).toEqual(walk(incremental))
      }),
      { numRuns: 200 }
    )
  })

  it("snapshotBuckets: each live entry once, in the bucket of its id's first 16 bits; a snapshot stays as taken; a bucket no change touched is the same array", () => {
    // few prefixes, so that buckets hold several entries
    const prefixedId = fc.tuple(fc.constantFrom("0000", "0001", "8000", "ffff", "FFFF"), fc.uuid()).map(([p, id]) => p + id.slice(4))
    const stepsArb = fc.uniqueArray(prefixedId, { minLength: 1, maxLength: 40 }).chain((ids) => {
      const someId = fc.constantFrom(...ids)
      const mutation = fc.oneof(
        someId.chain(entryArb).map((entry): Mutation => ({ op: "upsert", entry })),
        someId.map((id): Mutation => ({ op: "remove", id }))
      )
      return fc.record({ initial: fc.array(mutation, { maxLength: 60 }), later: fc.array(mutation, { maxLength: 10 }) })
    })
    // plain loops over the 65,536 buckets, one expect each: deep equality on them is slow
    const live = (snapshot: ReadonlyArray<ReadonlyArray<Entry>>) => {
      const found = new Map<string, Entry>()
      let misplaced = 0
      for (let b = 0; b < snapshot.length; b++) {
        for (const entry of snapshot[b]!) {
          if (bucketOf(entry.id) !== b || found.has(entry.id)) misplaced++
          found.set(entry.id, entry)
        }
      }
      expect(misplaced).toBe(0)
      return found
    }
    fc.assert(
      fc.property(stepsArb, ({ initial, later }) => {
        const { index, model } = setUp(initial)
        const first = index.snapshotBuckets()
        expect(first).toHaveLength(65_536)
        expect(live(first)).toEqual(model)
        const asTaken = first.map((bucket) => bucket.slice())
        const touched = new Set<number>()
        for (const m of later) {
          touched.add(bucketOf(m.op === "upsert" ? m.entry.id : m.id))
          applyTo(index, model, m)
        }
        const second = index.snapshotBuckets()
        let changedSnapshot = 0
        let untouchedCopied = 0
        for (let b = 0; b < first.length; b++) {
          const taken = asTaken[b]!
          if (first[b]!.length !== taken.length || first[b]!.some((e, i) => e !== taken[i])) changedSnapshot++
          if (!touched.has(b) && second[b] !== first[b]) untouchedCopied++
        }
        expect(changedSnapshot).toBe(0)
        expect(untouchedCopied).toBe(0)
        expect(live(second)).toEqual(model)
        // a bulk-built index buckets alike
        expect(live(CatalogueIndex.bulk([...model.values()]).snapshotBuckets())).toEqual(model)
      }),
      { numRuns: 150 }
    )
  })
})
