/**
 * The balances kept in memory on PGlite (Ledger/BalanceCache.ts): a read is kept until a change of
 * that merchant is announced; a read that a change overlapped is not kept; peek answers only what
 * is kept; on PostgreSQL (direct transactions exist) nothing is kept.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import { DirectTransactions } from "../../src/Db/Database.js"
import { BalanceCache } from "../../src/Ledger/BalanceCache.js"

const onPglite = BalanceCache.Default.pipe(Layer.provide(Layer.succeed(DirectTransactions, Option.none())))
const onPostgresql = BalanceCache.Default.pipe(
  Layer.provide(Layer.succeed(DirectTransactions, Option.some(() => Promise.resolve(undefined))))
)

/** A load that counts its calls and answers the current value. */
const counter = () => {
  const state = { loads: 0, value: 100 }
  const load = Effect.sync(() => {
    state.loads += 1
    return Option.some(state.value)
  })
  return { state, load }
}

describe("BalanceCache", () => {
  it.effect("keeps a read until a change of that merchant is announced, and only that merchant's", () =>
    Effect.gen(function*() {
      const cache = yield* BalanceCache
      const a = counter()
      const b = counter()
      expect(yield* cache.read("a", a.load)).toEqual(Option.some(100))
      expect(yield* cache.read("b", b.load)).toEqual(Option.some(100))
      a.state.value = 90
      expect(yield* cache.read("a", a.load)).toEqual(Option.some(100))
      expect(a.state.loads).toBe(1)
      yield* cache.changed("a")
      expect(yield* cache.read("a", a.load)).toEqual(Option.some(90))
      expect(a.state.loads).toBe(2)
      expect(yield* cache.read("b", b.load)).toEqual(Option.some(100))
      expect(b.state.loads).toBe(1)
    }).pipe(Effect.provide(onPglite)))

  it.effect("does not keep a read that a change overlapped, nor a merchant not found", () =>
    Effect.gen(function*() {
      const cache = yield* BalanceCache
      const gate = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      let loads = 0
      const slowLoad = Effect.zipRight(
        Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate)),
        Effect.sync(() => Option.some(++loads))
      )
      const reading = yield* Effect.fork(cache.read("m", slowLoad))
      // the read has begun (its load runs): a change is announced while it is under way
      yield* Deferred.await(started)
      cache.changedNow("m")
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(reading)).toEqual(Option.some(1))
      // the read overlapped a change: the next one loads again
      expect(yield* cache.read("m", slowLoad)).toEqual(Option.some(2))
      expect(yield* cache.read("m", slowLoad)).toEqual(Option.some(2))
      let missing = 0
      const none = Effect.sync(() => (missing += 1, Option.none<number>()))
      yield* cache.read("x", none)
      yield* cache.read("x", none)
      expect(missing).toBe(2)
    }).pipe(Effect.provide(onPglite)))

  it.effect("peek gives a kept read of the asked type without loading, and nothing once a change is announced", () =>
    Effect.gen(function*() {
      const cache = yield* BalanceCache
      const isNumber = (kept: unknown): kept is number => typeof kept === "number"
      const isText = (kept: unknown): kept is string => typeof kept === "string"
      expect(cache.peek("a", isNumber)).toBeUndefined()
      const a = counter()
      yield* cache.read("a", a.load)
      expect(cache.peek("a", isNumber)).toBe(100)
      expect(cache.peek("a", isText)).toBeUndefined()
      expect(a.state.loads).toBe(1)
      yield* cache.changed("a")
      expect(cache.peek("a", isNumber)).toBeUndefined()
    }).pipe(Effect.provide(onPglite)))

  it.effect("keeps nothing on PostgreSQL, where other processes write", () =>
    Effect.gen(function*() {
      const cache = yield* BalanceCache
      const a = counter()
      yield* cache.read("a", a.load)
      yield* cache.read("a", a.load)
      expect(a.state.loads).toBe(2)
      expect(cache.peek("a", (kept): kept is number => typeof kept === "number")).toBeUndefined()
    }).pipe(Effect.provide(onPostgresql)))
})
