/**
 * The synthetic listings' generator (src/Providers/Simulator/Listings.ts): its PRNG is mulberry32,
 * number for number, and a listing is a function of (seed, index) alone, so the simulated market
 * can rebuild any listing from its index and a restarted sync sees the same catalogue.
 */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { CatalogItemInput } from "../../src/Domain/CatalogItem.js"
import { prng, syntheticListing } from "../../src/Providers/Simulator/Listings.js"

/** mulberry32 as its author published it (a closure over its state), the reference. */
const mulberry32 = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe("the synthetic listings' generator", () => {
  it("draws mulberry32's numbers, in [0, 1), for any seed", () => {
    for (const seed of [0, 1, 730, 731, 2 ** 31 + 5, 4294967295]) {
      const ours = prng(seed)
      const reference = mulberry32(seed)
      const drawn = Array.from({ length: 2_000 }, () => ours())
      expect(drawn).toEqual(Array.from({ length: 2_000 }, () => reference()))
      expect(drawn.every((x) => x >= 0 && x < 1)).toBe(true)
      // not a constant: the draws spread over the interval
      expect(new Set(drawn.map((x) => Math.floor(x * 10))).size).toBe(10)
    }
  })

  it("makes a listing from its seed and index alone: the same again, another for another index or seed", () => {
    const first = Array.from({ length: 300 }, (_, i) => syntheticListing(730, i))
    // made again in another order, after other seeds' listings, and each twice in a row
    for (let k = 0; k < 8; k++) syntheticListing(11, k)
    for (let i = 299; i >= 0; i--) {
      expect(syntheticListing(730, i)).toEqual(first[i])
      expect(syntheticListing(730, i)).toEqual(first[i])
    }
    expect(new Set(first.map((l) => l.item.id)).size).toBe(300)
    expect(syntheticListing(731, 0).item.id).not.toBe(first[0]!.item.id)
  })

  it("gives a listing the v4 uuid of its first draws: 32 hex digits in order, then the variant", () => {
    // the ids a catalogue was stored with stay the same from one version of the generator to the next
    const hex = "0123456789abcdef"
    for (const index of [0, 1, 2, 99_999, 999_999]) {
      const draw = mulberry32((730 * 2654435761 + index * 40503) >>> 0)
      const digits = Array.from({ length: 32 }, () => hex[Math.floor(draw() * 16)]!)
      digits[12] = "4"
      digits[16] = hex[8 + Math.floor(draw() * 4)]!
      const s = digits.join("")
      const id = syntheticListing(730, index).item.id
      expect(id).toBe(`${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    }
  })

  it("makes listings the catalogue accepts, with every kind of item and both delivery types", () => {
    const listings = Array.from({ length: 2_000 }, (_, i) => syntheticListing(730, i))
    const decode = Schema.decodeUnknownEither(CatalogItemInput)
    for (const { item } of listings) expect(decode(item)._tag).toBe("Right")
    const categories = new Set(listings.map((l) => l.item.category))
    for (const category of ["case", "sticker", "knife", "gloves", "rifle"]) expect(categories).toContain(category)
    expect(new Set(listings.map((l) => l.item.delivery_type))).toEqual(new Set(["instant", "manual"]))
    expect(listings.some((l) => l.item.stickers.length > 0)).toBe(true)
  })

  it("spreads its generated text over the whole alphabet, in every position (several characters come from one draw)", () => {
    const listings = Array.from({ length: 2_000 }, (_, i) => syntheticListing(730, i))
    const images = listings.flatMap((l) => l.item.image_url === null ? [] : [l.item.image_url.slice(l.item.image_url.lastIndexOf("/") + 1)])
    for (const image of images) expect(image).toMatch(/^[A-Za-z0-9_-]{96,135}$/)
    const assets = listings.flatMap((l) => l.item.asset_id === null ? [] : [l.item.asset_id])
    for (const asset of assets) expect(asset).toMatch(/^[1-9][0-9]{16,18}$/)
    // each of the first positions takes every character (a draw's later characters included)
    for (let at = 0; at < 12; at++) {
      expect(new Set(images.map((image) => image[at])).size, `image character ${at}`).toBe(64)
      expect(new Set(assets.map((asset) => asset[at + 1])).size, `asset id digit ${at + 1}`).toBe(10)
      // and neighbours are independent: the same character twice about once in 64 (digits: 10)
      expect(images.filter((image) => image[at] === image[at + 1]).length / images.length).toBeLessThan(0.05)
      expect(assets.filter((asset) => asset[at + 1] === asset[at + 2]).length / assets.length).toBeLessThan(0.2)
    }
  })
})
