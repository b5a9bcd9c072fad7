/**
 * CatalogueIndex.page (src/Catalogue/Index.ts) against a naive filter + sort by (price, id):
 * random entries, random filters (name, price bounds in cents, category, exterior, rarity, float
 * bounds with null floats excluded, delivery, max minutes), both sorts, random page sizes; a
 * cursor walk visits every match once, in order; with random upserts and removes between pages
 * the keyset stays valid (nothing that stayed unchanged is skipped or repeated). The generated
 * entries, the naive model and the worlds are in test/support/catalogue-index-model.ts.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type Entry, entryOf } from "../../src/Catalogue/Entry.js"
import { bucketOf, CatalogueIndex } from "../../src/Catalogue/Index.js"
import { compareKeys, type Keyed } from "../../src/Catalogue/SortedList.js"
import { serialise } from "../../src/Domain/CatalogItem.js"
import {
  applyTo,
  CATEGORIES,
  entryArb,
  expectPage,
  HIGHEST_ID,
  idArb,
  keyText,
  LOWEST_ID,
  type Mutation,
  naive,
  setUp,
  worldArb
} from "../support/catalogue-index-model.js"

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
