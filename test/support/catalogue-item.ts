/**
 * The CatalogItem of the merchant API (spec 2.6; CONTRACT 6) as the black-box tests see it: its
 * fields, the exact shape list, search and stream upserts must have, and the item the API must
 * answer for an admin input (nulls for what the input leaves out, values exact).
 */
import { expect } from "vitest"

export interface Sticker {
  readonly slot: number
  readonly name: string
  readonly sticker_id: string | null
  readonly image_url: string | null
  readonly wear: number | null
}

export interface Item {
  readonly id: string
  readonly market_hash_name: string
  readonly image_url: string | null
  readonly price: number
  readonly exterior: string | null
  readonly exterior_code: string | null
  readonly float: number | null
  readonly paint_seed: number | null
  readonly paint_index: number | null
  readonly inspect_url: string | null
  readonly asset_id: string | null
  readonly steam_id: string | null
  readonly class_id: string | null
  readonly instance_id: string | null
  readonly is_stat_trak: boolean
  readonly is_souvenir: boolean
  readonly has_stickers: boolean
  readonly stickers_count: number
  readonly stickers: ReadonlyArray<Sticker>
  readonly category: string | null
  readonly weapon_type: string | null
  readonly rarity: string | null
  readonly rarity_color: string | null
  readonly delivery_type: "instant" | "manual"
  readonly estimated_delivery_minutes: number | null
}

/** Every field of spec 2.6, each always present in list, search and stream upserts. */
export const ITEM_FIELDS = [
  "id",
  "market_hash_name",
  "image_url",
  "price",
  "exterior",
  "exterior_code",
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
  "has_stickers",
  "stickers_count",
  "stickers",
  "category",
  "weapon_type",
  "rarity",
  "rarity_color",
  "delivery_type",
  "estimated_delivery_minutes"
] as const
const STICKER_FIELDS = ["image_url", "name", "slot", "sticker_id", "wear"]

/** Exactly the spec's fields, nothing else (no `sim`, no provider price), stickers an array. */
export const expectItemShape = (item: any) => {
  expect(Object.keys(item).sort()).toEqual([...ITEM_FIELDS].sort())
  expect(Array.isArray(item.stickers)).toBe(true)
  for (const s of item.stickers) expect(Object.keys(s).sort()).toEqual(STICKER_FIELDS)
}

/** An admin input: CatalogItem-shaped, some nullable fields omitted, maybe `sim` and extra fields. */
export type ItemInput = Record<string, unknown> & { readonly market_hash_name: string; readonly price: number }

/** The CatalogItem the API must answer for an input (CONTRACT 6: nulls for unknowns, exact values). */
export const expectedItem = (input: ItemInput, id: string): Item => {
  const get = <A>(key: string, fallback: A): A => (key in input ? input[key] as A : fallback)
  const stickers = get<ReadonlyArray<Record<string, unknown>>>("stickers", [])
  return {
    id,
    market_hash_name: input.market_hash_name,
    image_url: get("image_url", null),
    price: input.price,
    exterior: get("exterior", null),
    exterior_code: get("exterior_code", null),
    float: get("float", null),
    paint_seed: get("paint_seed", null),
    paint_index: get("paint_index", null),
    inspect_url: get("inspect_url", null),
    asset_id: get("asset_id", null),
    steam_id: get("steam_id", null),
    class_id: get("class_id", null),
    instance_id: get("instance_id", null),
    is_stat_trak: get("is_stat_trak", false),
    is_souvenir: get("is_souvenir", false),
    has_stickers: get("has_stickers", stickers.length > 0),
    stickers_count: get("stickers_count", stickers.length),
    stickers: stickers.map((s) => ({
      slot: s["slot"] as number,
      name: s["name"] as string,
      sticker_id: (s["sticker_id"] ?? null) as string | null,
      image_url: (s["image_url"] ?? null) as string | null,
      wear: (s["wear"] ?? null) as number | null
    })),
    category: get("category", null),
    weapon_type: get("weapon_type", null),
    rarity: get("rarity", null),
    rarity_color: get("rarity_color", null),
    delivery_type: input["delivery_type"] as "instant" | "manual",
    estimated_delivery_minutes: get("estimated_delivery_minutes", null)
  }
}
