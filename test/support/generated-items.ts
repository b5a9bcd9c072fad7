/**
 * Generated admin inputs for the catalogue tests: names that collide, differ in case or need URL
 * encoding, prices many items share, nullable fields given, null or left out, the three sticker
 * coverages, asset ids beyond 2^53, and simple complete items for the feed and dump tests.
 */
import * as fc from "fast-check"
import { randomBytes } from "node:crypto"
import type { ItemInput } from "./catalogue-item.js"

/** Duplicate names, case variants, a trailing space, characters that need URL encoding, Unicode. */
export const NAMES = [
  "AK-47 | Redline (Field-Tested)",
  "ak-47 | redline (field-tested)",
  "AK-47 | Redline (Field-Tested) ",
  "StatTrak™ AWP | Asiimov (Battle-Scarred)",
  "★ Karambit | Fade (Factory New)",
  "Sticker | Team & Co + \"100%\" / #1 ?x=y",
  "Operation Breakout Weapon Case",
  "名前 | ユニコード"
] as const
export const CATEGORIES = ["rifle", "knife", "sticker", "case", "sniper rifle"] as const
export const EXTERIORS = [["Factory New", "FN"], ["Minimal Wear", "MW"], ["Field-Tested", "FT"], ["Battle-Scarred", "BS"]] as const
export const RARITIES = [["Covert", "#eb4b4b"], ["Classified", "#d32ce6"], ["Mil-Spec Grade", "#4b69ff"]] as const
/** Prices many items share, so that ids break ties. */
export const COMMON_CENTS = [1, 99, 100, 250, 1999, 100_000] as const

const OMIT = Symbol("omit")
/** A nullable field: a value, null, or left out of the input (then null in the answer). */
const nullableField = <A>(arb: fc.Arbitrary<A>) =>
  fc.oneof({ weight: 3, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constant(OMIT) })
const digitsArb = (min: number, max: number) =>
  fc.array(fc.constantFrom(..."0123456789"), { minLength: min, maxLength: max }).map((d) => (d[0] === "0" ? "1" : "") + d.join(""))
const textArb = fc.string({ unit: "grapheme", maxLength: 30 })

const stickerArb = (slot: number, coverage: "name" | "full") =>
  coverage === "name"
    ? textArb.map((name) => ({ slot, name }))
    : fc.record({
      slot: fc.constant(slot),
      name: textArb,
      sticker_id: fc.option(digitsArb(1, 6), { nil: null }),
      image_url: fc.option(fc.webUrl(), { nil: null }),
      wear: fc.option(fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (x === 0 ? 0 : x)), { nil: null })
    })

const stickersArb = fc.oneof(
  fc.constant([] as Array<Record<string, unknown>>),
  ...(["name", "full"] as const).map((coverage) =>
    fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 }).chain((slots) =>
      fc.tuple(...slots.map((slot) => stickerArb(slot, coverage))).map((s) => s as Array<Record<string, unknown>>)
    )
  )
)

export const centsArb = fc.oneof(fc.constantFrom(...COMMON_CENTS), fc.integer({ min: 1, max: 9_999_999 }))

/** One admin input item; `id` present or left to the server. */
export const itemInputArb: fc.Arbitrary<ItemInput> = fc.record({
  id: fc.oneof({ weight: 5, arbitrary: fc.uuid() }, { weight: 1, arbitrary: fc.constant(OMIT) }),
  market_hash_name: fc.constantFrom(...NAMES),
  image_url: nullableField(fc.webUrl()),
  cents: centsArb,
  exterior: nullableField(fc.constantFrom(...EXTERIORS)),
  float: nullableField(fc.oneof(fc.constantFrom(0, 0.07, 0.15, 0.5, 1), fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (x === 0 ? 0 : x)))),
  paint_seed: nullableField(fc.integer({ min: 0, max: 1000 })),
  paint_index: nullableField(fc.integer({ min: 0, max: 1200 })),
  inspect_url: nullableField(fc.webUrl()),
  // beyond 2^53, as a string: must round-trip digit for digit
  asset_id: nullableField(fc.oneof(fc.bigInt({ min: 2n ** 53n + 1n, max: 10n ** 22n }).map(String), digitsArb(1, 12))),
  steam_id: nullableField(fc.bigInt({ min: 76561197960265729n, max: 76561202255233023n }).map(String)),
  class_id: nullableField(digitsArb(6, 12)),
  instance_id: nullableField(digitsArb(1, 12)),
  is_stat_trak: fc.oneof(fc.boolean(), fc.constant(OMIT)),
  is_souvenir: fc.oneof(fc.boolean(), fc.constant(OMIT)),
  stickers: fc.oneof(stickersArb, fc.constant(OMIT)),
  has_stickers: fc.oneof(fc.boolean(), fc.constant(OMIT)),
  stickers_count: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant(OMIT)),
  category: nullableField(fc.constantFrom(...CATEGORIES)),
  weapon_type: nullableField(fc.constantFrom("Rifle", "Knife", "Pistol")),
  rarity: nullableField(fc.constantFrom(...RARITIES)),
  delivery_type: fc.constantFrom("instant", "manual"),
  estimated_delivery_minutes: nullableField(fc.integer({ min: 0, max: 2000 })),
  // never exposed: the simulator's hint and provider economics
  extras: fc.oneof(
    fc.constant({}),
    fc.constant({ sim: { acquire: "unavailable" } }),
    fc.constant({ sim: { acquire: "price_changed" }, provider_price: 1.23, provider_id: "p1", markup: 0.07 })
  )
}).map((r) => {
  const out: Record<string, unknown> = {}
  const put = (key: string, value: unknown) => {
    if (value !== OMIT) out[key] = value
  }
  put("id", r.id)
  put("market_hash_name", r.market_hash_name)
  put("image_url", r.image_url)
  put("price", r.cents / 100)
  if (r.exterior !== OMIT) {
    out["exterior"] = r.exterior === null ? null : r.exterior[0]
    out["exterior_code"] = r.exterior === null ? null : r.exterior[1]
  }
  for (
    const key of [
      "float",
      "paint_seed",
      "paint_index",
      "inspect_url",
      "asset_id",
      "steam_id",
      "class_id",
      "instance_id",
      "is_stat_trak",
      "is_souvenir",
      "stickers",
      "has_stickers",
      "stickers_count",
      "category",
      "weapon_type"
    ] as const
  ) {
    put(key, r[key])
  }
  if (r.rarity !== OMIT) {
    out["rarity"] = r.rarity === null ? null : r.rarity[0]
    out["rarity_color"] = r.rarity === null ? null : r.rarity[1]
  }
  put("delivery_type", r.delivery_type)
  put("estimated_delivery_minutes", r.estimated_delivery_minutes)
  Object.assign(out, r.extras)
  return out as ItemInput
})

/** A simple complete item (for feed and dump tests), `size` bytes of image_url when asked. */
export const simpleItem = (id: string, cents: number, name = "AK-47 | Redline (Field-Tested)", imageBytes = 0): ItemInput => ({
  id,
  market_hash_name: name,
  price: cents / 100,
  image_url: imageBytes > 0 ? "https://img.example/" + randomText(imageBytes) : null,
  asset_id: "123456789012345678901",
  float: null,
  stickers: [],
  has_stickers: true,
  delivery_type: cents % 2 === 0 ? "instant" : "manual",
  sim: { acquire: "unavailable" }
})

/** Incompressible text of `n` characters (base64url of random bytes). */
export const randomText = (n: number) => randomBytes(Math.ceil(n * 3 / 4) + 3).toString("base64url").slice(0, n)
