/**
 * The live item index in memory: each item's JSON bytes (built once, when it changed) with the few
 * fields the filters need, sorted by price and by name, category, exterior and rarity, so that a
 * list or search page touches only about what it returns.
 */
import { type Entry, Interner } from "./Entry.js"
import { compareKeys, type Keyed, SortedList } from "./SortedList.js"

export interface ListFilters {
  readonly marketHashName?: string | undefined
  /** cents, inclusive */
  readonly minPrice?: number | undefined
  /** cents, inclusive */
  readonly maxPrice?: number | undefined
  readonly category?: string | undefined
  readonly exterior?: string | undefined
  readonly rarity?: string | undefined
  readonly minFloat?: number | undefined
  readonly maxFloat?: number | undefined
  readonly delivery?: "instant" | "manual" | undefined
  /** By-name buying: items whose estimated minutes are unknown or above this are excluded. */
  readonly maxMinutes?: number | undefined
}

export type SortOrder = "price_asc" | "price_desc"

export interface Page {
  readonly entries: ReadonlyArray<Entry>
  /** The last entry, when more match after it. */
  readonly next: Entry | undefined
}

/**
 * Entries are also kept in buckets by the first 16 bits of their id, for the dump: its pieces are
 * runs of buckets. A bucket is never changed in place (a change replaces it with a changed copy),
 * so a copy of the bucket array is a snapshot at one cursor, and a bucket that is the same array
 * in two snapshots holds the same entries.
 */
export const BUCKET_BITS = 16
const BUCKETS = 1 << BUCKET_BITS
const EMPTY_BUCKET: ReadonlyArray<Entry> = Object.freeze([])

/** Ids are UUIDs (PostgreSQL's uuid type), so the first four characters are hex digits. */
export const bucketOf = (id: string): number => parseInt(id.slice(0, 4), 16) & (BUCKETS - 1)

const matches = (e: Entry, f: ListFilters): boolean =>
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

/**
 * The number of an id's first 12 hex digits (before and after its first dash), or -1 when they are
 * not lowercase hex digits with the dash in its place. Between two such ids, their numbers are in
 * the order of their first 13 characters.
 */
const idHead = (id: string): number => {
  if (id.length < 13 || id.charCodeAt(8) !== 0x2d) return -1
  let head = 0
  for (let i = 0; i < 13; i++) {
    if (i === 8) continue
    const c = id.charCodeAt(i)
    const digit = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1
    if (digit < 0) return -1
    head = head * 16 + digit
  }
  return head
}

const LOWEST_ID = "00000000-0000-0000-0000-000000000000"
const HIGHEST_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"

export class CatalogueIndex {
  readonly interner: Interner
  private readonly byId = new Map<string, Entry>()
  private all = new SortedList<Entry>()
  private readonly buckets: Array<ReadonlyArray<Entry>> = new Array<ReadonlyArray<Entry>>(BUCKETS).fill(EMPTY_BUCKET)
  private readonly secondary = {
    name: new Map<string, SortedList<Entry>>(),
    category: new Map<string, SortedList<Entry>>(),
    exterior: new Map<string, SortedList<Entry>>(),
    rarity: new Map<string, SortedList<Entry>>()
  }

  get size(): number {
    return this.byId.size
  }

  get(id: string): Entry | undefined {
    return this.byId.get(id)
  }

  /** Every entry, in no particular order. */
  entries(): Iterable<Entry> {
    return this.byId.values()
  }

  /** Every entry, in buckets by id prefix that later changes do not touch (a copy of 65,536 references). */
  snapshotBuckets(): ReadonlyArray<ReadonlyArray<Entry>> {
    return this.buckets.slice()
  }

  /** Replaces `old` by `entry` in their bucket (the same one: the id decides), as a new array. */
  private rebucket(id: string, old: Entry | undefined, entry: Entry | undefined) {
    const b = bucketOf(id)
    const bucket = this.buckets[b]!
    const next = old === undefined ? bucket.slice() : bucket.filter((e) => e !== old)
    if (entry !== undefined) next.push(entry)
    this.buckets[b] = next.length === 0 ? EMPTY_BUCKET : next
  }

  private static add(map: Map<string, SortedList<Entry>>, key: string | null, entry: Entry) {
    if (key === null) return
    let list = map.get(key)
    if (list === undefined) map.set(key, list = new SortedList())
    list.insert(entry)
  }

  private static drop(map: Map<string, SortedList<Entry>>, key: string | null, entry: Entry) {
    if (key === null) return
    const list = map.get(key)
    if (list === undefined) return
    list.remove(entry)
    if (list.size === 0) map.delete(key)
  }

  /**
   * An index of many entries at once (the load at start): one sort, then every list is cut from
   * sorted runs instead of inserting entries one by one. Later entries with the same id win.
   *
   * At a million entries, each pass that read the entries in sorted order (the sort comparing
   * them, cutting the lists by key) read them from anywhere in a heap of gigabytes, and took
   * seconds. So the entries are read once, in the order they are held, into typed arrays: the
   * price, the id's first 12 hex digits and the number of each key's list. The sort compares
   * those (the ids only where both are equal), and the lists are cut from them.
   */
  static bulk(entries: ReadonlyArray<Entry>, interner?: Interner): CatalogueIndex {
    const index = new CatalogueIndex(interner)
    for (const entry of entries) index.byId.set(entry.id, entry)
    const all = Array.from(index.byId.values())
    const n = all.length
    const prices = new Float64Array(n)
    const heads = new Float64Array(n)
    let idsRead = true
    const buckets: Array<Array<Entry> | undefined> = new Array(BUCKETS)
    const keys = (["name", "category", "exterior", "rarity"] as const).map((field) => ({
      field,
      runs: new Array<Array<Entry>>(),
      numbers: new Map<string, number>(),
      of: new Int32Array(n)
    }))
    for (let i = 0; i < n; i++) {
      const entry = all[i]!
      const head = idHead(entry.id)
      idsRead &&= head >= 0
      prices[i] = entry.price
      heads[i] = head
      ;(buckets[bucketOf(entry.id)] ??= []).push(entry)
      for (const key of keys) {
        const value = entry[key.field]
        if (value === null) {
          key.of[i] = -1
          continue
        }
        let number = key.numbers.get(value)
        if (number === undefined) key.numbers.set(value, number = key.runs.push([]) - 1)
        key.of[i] = number
      }
    }
    for (let b = 0; b < BUCKETS; b++) index.buckets[b] = buckets[b] ?? EMPTY_BUCKET
    const order = new Uint32Array(n)
    for (let i = 0; i < n; i++) order[i] = i
    // compareKeys's order: between ids whose first 12 digits are read, their numbers order them as
    // their first 13 characters do (an id of another shape, never expected, makes it compareKeys)
    order.sort(
      idsRead
        ? (a, b) => prices[a]! - prices[b]! || heads[a]! - heads[b]! || compareKeys(all[a]!, all[b]!)
        : (a, b) => compareKeys(all[a]!, all[b]!)
    )
    const sorted = new Array<Entry>(n)
    for (let k = 0; k < n; k++) {
      const i = order[k]!
      const entry = all[i]!
      sorted[k] = entry
      for (const key of keys) if (key.of[i]! >= 0) key.runs[key.of[i]!]!.push(entry)
    }
    index.all = SortedList.fromSorted(sorted)
    for (const key of keys) {
      for (const [value, number] of key.numbers) index.secondary[key.field].set(value, SortedList.fromSorted(key.runs[number]!))
    }
    return index
  }

  constructor(interner?: Interner) {
    this.interner = interner ?? new Interner()
  }

  /** Moves `old`'s place in the list of its key to `entry`, which may have another key. */
  private static move(map: Map<string, SortedList<Entry>>, old: Entry, oldKey: string | null, entry: Entry, key: string | null) {
    if (key !== null && key === oldKey && map.get(key)?.replace(old, entry) === true) return
    CatalogueIndex.drop(map, oldKey, old)
    CatalogueIndex.add(map, key, entry)
  }

  upsert(entry: Entry): void {
    const old = this.byId.get(entry.id)
    this.rebucket(entry.id, old, entry)
    this.byId.set(entry.id, entry)
    if (old === undefined) {
      this.all.insert(entry)
      CatalogueIndex.add(this.secondary.name, entry.name, entry)
      CatalogueIndex.add(this.secondary.category, entry.category, entry)
      CatalogueIndex.add(this.secondary.exterior, entry.exterior, entry)
      CatalogueIndex.add(this.secondary.rarity, entry.rarity, entry)
      return
    }
    // a changed item (mostly its price) moves in each list rather than leaving and entering it
    if (!this.all.replace(old, entry)) this.all.insert(entry)
    CatalogueIndex.move(this.secondary.name, old, old.name, entry, entry.name)
    CatalogueIndex.move(this.secondary.category, old, old.category, entry, entry.category)
    CatalogueIndex.move(this.secondary.exterior, old, old.exterior, entry, entry.exterior)
    CatalogueIndex.move(this.secondary.rarity, old, old.rarity, entry, entry.rarity)
  }

  remove(id: string): boolean {
    const old = this.byId.get(id)
    if (old === undefined) return false
    this.unindex(old)
    this.rebucket(id, old, undefined)
    return true
  }

  /** Takes an entry out of every sorted list and the id map (not its bucket). */
  private unindex(old: Entry): void {
    this.byId.delete(old.id)
    this.all.remove(old)
    CatalogueIndex.drop(this.secondary.name, old.name, old)
    CatalogueIndex.drop(this.secondary.category, old.category, old)
    CatalogueIndex.drop(this.secondary.exterior, old.exterior, old)
    CatalogueIndex.drop(this.secondary.rarity, old.rarity, old)
  }

  /** The smallest sorted list that holds every candidate for these filters. */
  private candidates(f: ListFilters): SortedList<Entry> | undefined {
    const options: Array<SortedList<Entry> | undefined> = []
    if (f.marketHashName !== undefined) options.push(this.secondary.name.get(f.marketHashName))
    if (f.category !== undefined) options.push(this.secondary.category.get(f.category))
    if (f.exterior !== undefined) options.push(this.secondary.exterior.get(f.exterior))
    if (f.rarity !== undefined) options.push(this.secondary.rarity.get(f.rarity))
    if (options.length === 0) return this.all
    if (options.some((o) => o === undefined)) return undefined
    return options.reduce((a, b) => (a!.size <= b!.size ? a : b))
  }

  /**
   * One page in price order after the keyset position `after` (exclusive), or from the start of
   * the price bounds. Stops as soon as it has `limit` entries and knows whether one more exists.
   */
  page(f: ListFilters, sort: SortOrder, after: Keyed | undefined, limit: number): Page {
    const list = this.candidates(f)
    if (list === undefined) return { entries: [], next: undefined }
    const out: Array<Entry> = []
    let more = false
    /** Takes a matching entry; false ends the walk (past a price bound, or one beyond the page). */
    const visit = (entry: Entry): boolean => {
      if (sort === "price_asc" && f.maxPrice !== undefined && entry.price > f.maxPrice) return false
      if (sort === "price_desc" && f.minPrice !== undefined && entry.price < f.minPrice) return false
      if (!matches(entry, f)) return true
      if (out.length === limit) {
        more = true
        return false
      }
      out.push(entry)
      return true
    }
    if (sort === "price_asc") {
      list.visitAscending(after ?? (f.minPrice !== undefined ? { price: f.minPrice, id: LOWEST_ID } : undefined), after === undefined, visit)
    } else {
      list.visitDescending(after ?? (f.maxPrice !== undefined ? { price: f.maxPrice, id: HIGHEST_ID } : undefined), after === undefined, visit)
    }
    return { entries: out, next: more ? out[out.length - 1] : undefined }
  }
}
