/** The compiled guard (src/Domain/Guard.ts) accepts exactly what Schema.is accepts. */
import { Arbitrary, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { CatalogItem } from "../../src/Domain/CatalogItem.js"
import { guardOf } from "../../src/Domain/Guard.js"

const isItem = Schema.is(CatalogItem)
const guard = guardOf(CatalogItem)
const validItem = Arbitrary.make(CatalogItem)
const keys = Object.keys(CatalogItem.fields)

/** A valid item with one field replaced by any JSON value, or removed, or a sticker's field replaced. */
const damagedItem = fc.oneof(
  fc.tuple(validItem, fc.constantFrom(...keys), fc.jsonValue()).map(([item, key, value]) => ({ ...item, [key]: value })),
  fc.tuple(validItem, fc.constantFrom(...keys)).map(([item, key]) => {
    const copy: Record<string, unknown> = { ...item }
    delete copy[key]
    return copy
  }),
  fc.tuple(validItem, fc.constantFrom("slot", "name", "sticker_id", "image_url", "wear"), fc.jsonValue()).map(([item, key, value]) => ({
    ...item,
    stickers: [...item.stickers, { slot: 0, name: "x", sticker_id: null, image_url: null, wear: null, [key]: value }]
  }))
)

describe("guardOf", () => {
  it("accepts every valid CatalogItem, with or without extra fields", () => {
    fc.assert(
      fc.property(validItem, fc.jsonValue(), (item, extra) => {
        expect(guard(item)).toBe(true)
        expect(guard({ ...item, extra })).toBe(isItem({ ...item, extra }))
      }),
      { numRuns: 500 }
    )
  })

  it("agrees with Schema.is on damaged items: wrong types, out-of-range numbers, bad UUIDs, missing fields", () => {
    fc.assert(
      fc.property(damagedItem, (value) => {
        expect(guard(value)).toBe(isItem(value))
      }),
      { numRuns: 3_000 }
    )
  })

  it("agrees with Schema.is on any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(guard(value)).toBe(isItem(value))
      }),
      { numRuns: 1_000 }
    )
  })

  it("refuses a damaged item that Schema.is refuses (a check that cannot pass everything)", () => {
    const item = fc.sample(validItem, { numRuns: 1, seed: 1 })[0]!
    for (const damaged of [{ ...item, id: "not-a-uuid" }, { ...item, float: 2 }, { ...item, stickers_count: 1.5 }, { ...item, delivery_type: "later" }]) {
      expect(isItem(damaged)).toBe(false)
      expect(guard(damaged)).toBe(false)
    }
  })

  it("is refused when built for a schema with a transformation, rather than letting values through", () => {
    expect(() => guardOf(Schema.Struct({ at: Schema.DateFromString }) as unknown as Schema.Schema<unknown, unknown>)).toThrow(/not supported/)
  })
})
