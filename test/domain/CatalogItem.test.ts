import { serialize } from "node:v8"
import { describe, expect, it } from "vitest"
import { asciiJson, type CatalogItem, serialise } from "../../src/Domain/CatalogItem.js"

const item = (name: string, sticker: string): CatalogItem => ({
  id: "3f1c2b9a-8d7e-4c6b-9a5f-0e1d2c3b4a59",
  market_hash_name: name,
  image_url: null,
  price: 12.34,
  exterior: "Factory New",
  exterior_code: "FN",
  float: 0.01,
  paint_seed: 1,
  paint_index: 2,
  inspect_url: null,
  asset_id: null,
  steam_id: null,
  class_id: null,
  instance_id: null,
  is_stat_trak: true,
  is_souvenir: false,
  has_stickers: true,
  stickers_count: 1,
  stickers: [{ slot: 0, name: sticker, sticker_id: null, image_url: null, wear: null }],
  category: "knife",
  weapon_type: "Knife",
  rarity: "Covert",
  rarity_color: "#eb4b4b",
  delivery_type: "instant",
  estimated_delivery_minutes: null
})

describe("serialise", () => {
  it("writes characters beyond ASCII as \\u escapes: pure ASCII bytes, the same JSON value", () => {
    for (
      const [name, sticker] of [
        ["★ StatTrak™ Karambit | Fade (Factory New)", "Sticker | Crown (Foil) ★"],
        ["名前 | ユニコード", "Émoji 😀 \"quoted\" \\ back"],
        ["AK-47 | Redline (Field-Tested)", "Sticker | plain"]
      ] as const
    ) {
      const value = item(name, sticker)
      const json = serialise(value)
      expect(/^[\x20-\x7e]*$/.test(json)).toBe(true)
      expect(JSON.parse(json)).toEqual(value)
    }
    expect(serialise(item("★ a™", "x"))).toContain(String.raw`"market_hash_name":"\u2605 a\u2122"`)
  })

  it("leaves pure ASCII JSON as JSON.stringify writes it, in the canonical field order", () => {
    const value = item("AK-47 | Redline (Field-Tested)", "plain")
    expect(serialise(value)).toBe(JSON.stringify(value))
  })

  it("asciiJson escapes JSON written before items were stored as ASCII, and leaves ASCII as it is", () => {
    expect(asciiJson("{\"n\":\"★ Karambit\",\"s\":\"名\"}")).toBe(String.raw`{"n":"\u2605 Karambit","s":"\u540d"}`)
    const ascii = "{\"n\":\"AK-47 | Redline\"}"
    expect(asciiJson(ascii)).toBe(ascii)
    expect(JSON.parse(asciiJson("{\"e\":\"😀\"}"))).toEqual({ e: "😀" })
  })

  it("keeps an escaped text at one byte a character, as V8 keeps a pure ASCII string", () => {
    // V8's serializer tags a string by how V8 holds it: '"' one byte a character, 'c' two
    const held = (s: string) => String.fromCharCode(serialize(s)[2]!)
    expect(held("★ a")).toBe("c")
    expect(held(asciiJson("{\"n\":\"★ Karambit\"}"))).toBe("\"")
    expect(held(serialise(item("★ StatTrak™ Karambit | Fade (Factory New)", "Sticker | Crown (Foil) ★")))).toBe("\"")
    expect(held(serialise(item("AK-47 | Redline (Field-Tested)", "Sticker | plain")))).toBe("\"")
  })
})
