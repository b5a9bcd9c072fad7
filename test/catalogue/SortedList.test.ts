/**
 * SortedList (src/Catalogue/SortedList.ts) against a naive sorted array: ascending and descending
 * walks from no bound, an inclusive bound and an exclusive bound (present or absent keys), across
 * chunk splits and chunk removals, with random inserts and removes.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { compareKeys, type Keyed, SortedList } from "../../src/Catalogue/SortedList.js"

interface E extends Keyed {
  readonly tag: number
}

/** A small id space so that many entries share a price and ties are broken by id. */
const ID_POOL = Array.from({ length: 40 }, (_, i) => `${(i * 7919 % 256).toString(16).padStart(8, "0")}-0000-4000-8000-${String(i).padStart(12, "0")}`)
const idArb = fc.oneof(fc.constantFrom(...ID_POOL), fc.uuid())
const keyArb: fc.Arbitrary<Keyed> = fc.record({ price: fc.integer({ min: 0, max: 30 }), id: idArb })
const keyText = (k: Keyed) => `${k.price}|${k.id}`
const keysArb = (maxLength: number) => fc.uniqueArray(keyArb, { selector: keyText, maxLength, size: "max" })

const naiveAscending = (all: ReadonlyArray<Keyed>, from?: Keyed, inclusive = false) =>
  [...all].sort(compareKeys).filter((e) => from === undefined || (inclusive ? compareKeys(e, from) >= 0 : compareKeys(e, from) > 0))
const naiveDescending = (all: ReadonlyArray<Keyed>, before?: Keyed, inclusive = false) =>
  [...all].sort(compareKeys).reverse().filter((e) => before === undefined || (inclusive ? compareKeys(e, before) <= 0 : compareKeys(e, before) < 0))

const keysOf = (it: Iterable<Keyed>) => Array.from(it, keyText)

/** A large set of unique keys from a seed (enough to split chunks of 512 several times). */
const bigKeys = (seed: number, n: number): Array<E> => {
  let a = seed >>> 0
  const rng = () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const seen = new Set<string>()
  const out: Array<E> = []
  while (out.length < n) {
    const k = { price: Math.floor(rng() * 50), id: ID_POOL[Math.floor(rng() * ID_POOL.length)]! + Math.floor(rng() * 1000), tag: out.length }
    if (seen.has(keyText(k))) continue
    seen.add(keyText(k))
    out.push(k)
  }
  return out
}

const build = (keys: ReadonlyArray<Keyed>) => {
  const list = new SortedList<Keyed>()
  for (const k of keys) list.insert(k)
  return list
}

/** Bounds: absent, an existing key, or any key (usually absent), each inclusive or exclusive. */
const boundArb = (keys: ReadonlyArray<Keyed>) =>
  fc.oneof(
    fc.constant(undefined),
    keyArb,
    keys.length > 0 ? fc.constantFrom(...keys) : keyArb,
    fc.record({ price: fc.constantFrom(-1, 0, 31, 1000), id: idArb })
  )

describe("SortedList", () => {
  it("ascending and descending walks match a sorted array, with inclusive and exclusive bounds", () => {
    fc.assert(
      fc.property(
        keysArb(200).chain((keys) => fc.tuple(fc.constant(keys), boundArb(keys), fc.boolean(), fc.integer({ min: 0, max: keys.length }))),
        ([keys, bound, inclusive, shuffleAt]) => {
          // insertion order does not matter: insert a rotation of the keys
          const list = build([...keys.slice(shuffleAt), ...keys.slice(0, shuffleAt)])
          expect(list.size).toBe(keys.length)
          expect(keysOf(list)).toEqual(keysOf(naiveAscending(keys)))
          expect(keysOf(list.ascending(bound, inclusive))).toEqual(keysOf(naiveAscending(keys, bound, inclusive)))
          expect(keysOf(list.descending(bound, inclusive))).toEqual(keysOf(naiveDescending(keys, bound, inclusive)))
        }
      ),
      { numRuns: 200 }
    )
  })

  it("an inclusive bound on a present key starts at it; an exclusive one starts next to it", () => {
    const keys = [{ price: 1, id: "a" }, { price: 2, id: "a" }, { price: 2, id: "b" }, { price: 3, id: "a" }]
    const list = build(keys)
    expect(keysOf(list.ascending({ price: 2, id: "a" }, true))).toEqual(["2|a", "2|b", "3|a"])
    expect(keysOf(list.ascending({ price: 2, id: "a" }, false))).toEqual(["2|b", "3|a"])
    expect(keysOf(list.descending({ price: 2, id: "b" }, true))).toEqual(["2|b", "2|a", "1|a"])
    expect(keysOf(list.descending({ price: 2, id: "b" }, false))).toEqual(["2|a", "1|a"])
    // absent keys between entries
    expect(keysOf(list.ascending({ price: 2, id: "aa" }, true))).toEqual(["2|b", "3|a"])
    expect(keysOf(list.descending({ price: 2, id: "aa" }, true))).toEqual(["2|a", "1|a"])
    // beyond either end
    expect(keysOf(list.ascending({ price: 9, id: "a" }))).toEqual([])
    expect(keysOf(list.descending({ price: 0, id: "a" }))).toEqual([])
    expect(keysOf(list.ascending({ price: 0, id: "a" }))).toEqual(["1|a", "2|a", "2|b", "3|a"])
    expect(keysOf(list.descending({ price: 9, id: "a" }))).toEqual(["3|a", "2|b", "2|a", "1|a"])
    // empty list
    const empty = new SortedList<Keyed>()
    expect(keysOf(empty.ascending())).toEqual([])
    expect(keysOf(empty.descending({ price: 1, id: "a" }, true))).toEqual([])
    expect(empty.remove({ price: 1, id: "a" })).toBe(false)
  })

  it("random inserts and removes keep the order, the size and remove's answer (small lists)", () => {
    const opArb = fc.oneof(
      fc.record({ op: fc.constant("insert" as const), key: keyArb }),
      fc.record({ op: fc.constant("remove" as const), key: keyArb })
    )
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 300 }), boundArb([]), fc.boolean(), (ops, bound, inclusive) => {
        const list = new SortedList<Keyed>()
        const model = new Map<string, Keyed>()
        for (const { op, key } of ops) {
          if (op === "insert") {
            if (model.has(keyText(key))) continue // the list holds unique keys (the index removes first)
            list.insert(key)
            model.set(keyText(key), key)
          } else {
            expect(list.remove(key)).toBe(model.delete(keyText(key)))
          }
        }
        const all = Array.from(model.values())
        expect(list.size).toBe(all.length)
        expect(keysOf(list.ascending(bound, inclusive))).toEqual(keysOf(naiveAscending(all, bound, inclusive)))
        expect(keysOf(list.descending(bound, inclusive))).toEqual(keysOf(naiveDescending(all, bound, inclusive)))
      }),
      { numRuns: 150 }
    )
  })

  it("large lists (several chunks, chunk splits and emptied chunks) walk correctly from any bound", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 5000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5200 }), fc.boolean()), { minLength: 1, maxLength: 8 }),
        (seed, n, removeShare, bounds) => {
          const keys = bigKeys(seed, n)
          const list = new SortedList<E>()
          for (const k of keys) list.insert(k)
          // remove a share of them, in contiguous runs as well as scattered, emptying whole chunks
          const kept: Array<E> = []
          const sorted = [...keys].sort(compareKeys)
          const runStart = Math.floor(sorted.length * removeShare / 2)
          const runEnd = Math.min(sorted.length, runStart + 1200)
          sorted.forEach((k, i) => {
            const gone = (i >= runStart && i < runEnd) || (k.tag % 7 === 3)
            if (gone) expect(list.remove(k)).toBe(true)
            else kept.push(k)
          })
          expect(list.size).toBe(kept.length)
          expect(keysOf(list)).toEqual(keysOf(naiveAscending(kept)))
          expect(keysOf(list.descending())).toEqual(keysOf(naiveDescending(kept)))
          for (const [at, inclusive] of bounds) {
            // a present key, a removed key, or a key past the end
            const bound = sorted.length === 0 ? { price: 1, id: "x" } : at < sorted.length ? sorted[at]! : { price: 60, id: "x" }
            expect(keysOf(list.ascending(bound, inclusive))).toEqual(keysOf(naiveAscending(kept, bound, inclusive)))
            expect(keysOf(list.descending(bound, inclusive))).toEqual(keysOf(naiveDescending(kept, bound, inclusive)))
          }
          // the removed keys are gone for good
          for (const k of sorted.slice(runStart, Math.min(runEnd, runStart + 20))) expect(list.remove(k)).toBe(false)
        }
      ),
      { numRuns: 15 }
    )
  })

  it("replace moves an entry to its new key, within its chunk or across chunks, like remove then insert", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.integer({ min: 1, max: 3000 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: -60, max: 60 }), fc.boolean()), { minLength: 1, maxLength: 400 }),
        (seed, n, moves) => {
          const keys = bigKeys(seed, n)
          const list = new SortedList<E>()
          for (const k of keys) list.insert(k)
          const model = new Map(keys.map((k) => [k.id + "|" + k.tag, k]))
          const current = [...keys]
          for (const [pick, shift, far] of moves) {
            const at = pick % current.length
            const old = current[at]!
            // small shifts mostly stay in the chunk; far ones cross chunks (prices span 0..50)
            const price = far ? (old.price + shift + 120) % 120 : Math.max(0, old.price + Math.sign(shift))
            const moved: E = { price, id: old.id, tag: old.tag }
            if ([...model.values()].some((k) => k !== old && compareKeys(k, moved) === 0)) continue
            expect(list.replace(old, moved)).toBe(true)
            model.set(old.id + "|" + old.tag, moved)
            current[at] = moved
          }
          const kept = [...model.values()]
          expect(list.size).toBe(kept.length)
          expect(keysOf(list)).toEqual(keysOf(naiveAscending(kept)))
          expect(keysOf(list.descending())).toEqual(keysOf(naiveDescending(kept)))
          // an absent key is not replaced, and nothing changes
          expect(list.replace({ price: 1_000, id: "absent" }, { price: 1, id: "absent", tag: -1 })).toBe(false)
          expect(list.size).toBe(kept.length)
        }
      ),
      { numRuns: 25 }
    )
  })
})
