/**
 * CatalogItem (spec 2.6): the public schema (for OpenAPI and for admin input) and the canonical
 * serialiser. Each item's JSON bytes are built once, when it changes, and list, search, dump and
 * stream all answer from those bytes.
 */
import { Schema } from "effect"

export const DeliveryType = Schema.Literal("instant", "manual")

export const Sticker = Schema.Struct({
  slot: Schema.Int.pipe(Schema.between(0, 3)),
  name: Schema.String,
  sticker_id: Schema.NullOr(Schema.String),
  image_url: Schema.NullOr(Schema.String),
  wear: Schema.NullOr(Schema.Number.pipe(Schema.between(0, 1)))
}).annotations({ identifier: "Sticker" })
export type Sticker = typeof Sticker.Type

const nullable = <A, I>(schema: Schema.Schema<A, I>) => Schema.NullOr(schema)

export const CatalogItem = Schema.Struct({
  id: Schema.UUID,
  market_hash_name: Schema.String,
  image_url: nullable(Schema.String),
  price: Schema.Number.annotations({ description: "USD, price paid if bought now" }),
  exterior: nullable(Schema.String),
  exterior_code: nullable(Schema.String),
  float: nullable(Schema.Number.pipe(Schema.between(0, 1))),
  paint_seed: nullable(Schema.Int),
  paint_index: nullable(Schema.Int),
  inspect_url: nullable(Schema.String),
  asset_id: nullable(Schema.String),
  steam_id: nullable(Schema.String),
  class_id: nullable(Schema.String),
  instance_id: nullable(Schema.String),
  is_stat_trak: Schema.Boolean,
  is_souvenir: Schema.Boolean,
  has_stickers: Schema.Boolean,
  stickers_count: Schema.Int,
  stickers: Schema.Array(Sticker),
  category: nullable(Schema.String),
  weapon_type: nullable(Schema.String),
  rarity: nullable(Schema.String),
  rarity_color: nullable(Schema.String),
  delivery_type: DeliveryType,
  estimated_delivery_minutes: nullable(Schema.Int)
}).annotations({ identifier: "CatalogItem" })
export type CatalogItem = typeof CatalogItem.Type

/** What the supplier may say about an item at acquisition, in test mode (CONTRACT 5.3). Never exposed. */
export const SimHints = Schema.Struct({
  acquire: Schema.optional(Schema.Literal("unavailable", "price_changed")),
  // beyond CONTRACT 5.3: a trade that would complete is reversed with REVERT_UNKNOWN (no token has it)
  reversal: Schema.optional(Schema.Literal("unknown"))
})
export type SimHints = typeof SimHints.Type

/** A sticker as sources give it: name only, or all five fields. */
export const StickerInput = Schema.Struct({
  slot: Schema.Int.pipe(Schema.between(0, 3)),
  name: Schema.String,
  sticker_id: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  image_url: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  wear: Schema.optionalWith(Schema.NullOr(Schema.Number.pipe(Schema.between(0, 1))), { default: () => null })
})

/**
 * A CatalogItem-shaped input (admin API, fixtures): id optional, nullable fields optional
 * (default null), stickers default [] and stickers_count default to their number, `sim` allowed.
 */
const optionalNullable = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(Schema.NullOr(schema), { default: () => null })

/** The most minutes an item's delivery may be estimated at: a purchase keeps them as a PostgreSQL integer. */
export const MAX_DELIVERY_MINUTES = 2_147_483_647

export const CatalogItemInput = Schema.Struct({
  id: Schema.optional(Schema.UUID),
  market_hash_name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  image_url: optionalNullable(Schema.String),
  price: Schema.Number.pipe(Schema.positive(), Schema.lessThan(100_000_000)),
  exterior: optionalNullable(Schema.String),
  exterior_code: optionalNullable(Schema.String),
  float: optionalNullable(Schema.Number.pipe(Schema.between(0, 1))),
  paint_seed: optionalNullable(Schema.Int),
  paint_index: optionalNullable(Schema.Int),
  inspect_url: optionalNullable(Schema.String),
  asset_id: optionalNullable(Schema.String),
  steam_id: optionalNullable(Schema.String),
  class_id: optionalNullable(Schema.String),
  instance_id: optionalNullable(Schema.String),
  is_stat_trak: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  is_souvenir: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  has_stickers: Schema.optional(Schema.Boolean),
  stickers_count: Schema.optional(Schema.Int.pipe(Schema.between(0, 5))),
  stickers: Schema.optionalWith(Schema.Array(StickerInput), { default: () => [] }),
  category: optionalNullable(Schema.String),
  weapon_type: optionalNullable(Schema.String),
  rarity: optionalNullable(Schema.String),
  rarity_color: optionalNullable(Schema.String),
  delivery_type: DeliveryType,
  estimated_delivery_minutes: optionalNullable(Schema.Int.pipe(Schema.between(0, MAX_DELIVERY_MINUTES))),
  sim: Schema.optional(SimHints)
})
export type CatalogItemInput = typeof CatalogItemInput.Type

const NON_ASCII = /[\u0080-\uffff]/g

/**
 * The item's JSON: every field present in this order, nullable ones as null, nothing else (no
 * economics, no sim). One object literal given to JSON.stringify: V8's own serialiser is twice as
 * fast as joining the fields' texts (a first sync serialises every item of the catalogue).
 * Characters beyond ASCII are written as \u escapes (the same JSON value): V8 keeps a string with
 * a single ★ or ™ at two bytes a character, a pure ASCII one at one, and a million items are held.
 */
export const serialise = (item: CatalogItem): string =>
  asciiJson(JSON.stringify(
    {
      id: item.id,
      market_hash_name: item.market_hash_name,
      image_url: item.image_url ?? null,
      price: item.price,
      exterior: item.exterior ?? null,
      exterior_code: item.exterior_code ?? null,
      float: item.float ?? null,
      paint_seed: item.paint_seed ?? null,
      paint_index: item.paint_index ?? null,
      inspect_url: item.inspect_url ?? null,
      asset_id: item.asset_id ?? null,
      steam_id: item.steam_id ?? null,
      class_id: item.class_id ?? null,
      instance_id: item.instance_id ?? null,
      is_stat_trak: item.is_stat_trak,
      is_souvenir: item.is_souvenir,
      has_stickers: item.has_stickers,
      stickers_count: item.stickers_count,
      stickers: item.stickers.map((s): Sticker => ({
        slot: s.slot,
        name: s.name,
        sticker_id: s.sticker_id ?? null,
        image_url: s.image_url ?? null,
        wear: s.wear ?? null
      })),
      category: item.category ?? null,
      weapon_type: item.weapon_type ?? null,
      rarity: item.rarity ?? null,
      rarity_color: item.rarity_color ?? null,
      delivery_type: item.delivery_type,
      estimated_delivery_minutes: item.estimated_delivery_minutes ?? null
    } satisfies { readonly [K in keyof CatalogItem]-?: unknown }
  ))

/**
 * JSON text with every character beyond ASCII as a \u escape: the same value, one byte a character.
 * The escaped text is made again from its bytes: `replace` keeps its subject's two bytes a
 * character though none is beyond ASCII any more, and a quarter of the synthetic catalogue's items
 * (every ★ and ™) were held at twice their size.
 */
export const asciiJson = (json: string): string =>
  // as many UTF-8 bytes as characters: ASCII (node counts them in half the time a regex takes to look)
  Buffer.byteLength(json, "utf8") === json.length
    ? json
    : Buffer.from(json.replace(NON_ASCII, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")), "latin1").toString("latin1")
