/**
 * An item as the index keeps it: its JSON text (built once, when it changed) and the few fields the
 * filters and sorts read, the strings that repeat across items kept once; and the lists of them
 * written as JSON, byte for byte.
 */
import { asciiJson, type CatalogItem } from "../Domain/CatalogItem.js"
import type { Keyed } from "./SortedList.js"

export interface Entry extends Keyed {
  /** cents */
  readonly price: number
  readonly id: string
  readonly json: string
  readonly name: string
  readonly category: string | null
  readonly exterior: string | null
  readonly rarity: string | null
  readonly float: number | null
  readonly delivery: "instant" | "manual"
  readonly minutes: number | null
}

/** Strings that repeat across items (names, categories) are kept once. */
export class Interner {
  private readonly strings = new Map<string, string>()
  intern<S extends string | null>(s: S): S {
    if (s === null) return s
    const known = this.strings.get(s)
    if (known !== undefined) return known as S
    this.strings.set(s, s)
    return s
  }
}

/** What of an item the index keeps (beside its JSON): the fields its filters and sorts read. */
export type IndexedItem = Pick<
  CatalogItem,
  "id" | "market_hash_name" | "price" | "category" | "exterior" | "rarity" | "float" | "delivery_type" | "estimated_delivery_minutes"
>

/** Those fields of an item, apart from it (the rest of the item can then be garbage). */
export const indexedItem = (item: IndexedItem): IndexedItem => ({
  id: item.id,
  market_hash_name: item.market_hash_name,
  price: item.price,
  category: item.category,
  exterior: item.exterior,
  rarity: item.rarity,
  float: item.float,
  delivery_type: item.delivery_type,
  estimated_delivery_minutes: item.estimated_delivery_minutes
})

export const entryOf = (item: IndexedItem, priceCents: number, json: string, interner?: { intern: <S extends string | null>(s: S) => S }): Entry => {
  const i = interner ?? { intern: <S extends string | null>(s: S) => s }
  return {
    id: item.id,
    price: priceCents,
    // rows written before items were stored as ASCII are made so here: one byte a character
    json: asciiJson(json),
    name: i.intern(item.market_hash_name),
    category: i.intern(item.category),
    exterior: i.intern(item.exterior),
    rarity: i.intern(item.rarity),
    float: item.float,
    delivery: item.delivery_type,
    minutes: item.estimated_delivery_minutes
  }
}

/** Bytes of the entries' JSON joined by commas (item JSON is ASCII: a byte a character). */
export const jsonListLength = (entries: ReadonlyArray<Entry>): number => {
  let length = Math.max(0, entries.length - 1)
  for (let i = 0; i < entries.length; i++) length += entries[i]!.json.length
  return length
}

/**
 * Writes the entries' JSON joined by commas into `target` at `at`, after a comma if `continued`
 * (a list written in parts); returns where it ended. Nothing is encoded: each string is copied
 * byte for byte.
 */
export const writeJsonList = (target: Buffer, at: number, entries: ReadonlyArray<Entry>, continued: boolean): number => {
  for (let i = 0; i < entries.length; i++) {
    if (i > 0 || continued) target[at++] = 0x2c // ,
    at += target.write(entries[i]!.json, at, "latin1")
  }
  return at
}
