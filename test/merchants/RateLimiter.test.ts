/**
 * Token buckets of src/Merchants/RateLimiter.ts under the TestClock: burst, refill, remaining
 * counts, key independence, peek, Retry-After.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { makeTokenBuckets } from "../../src/Merchants/RateLimiter.js"

/** Takes `n` tokens from `key`, returning every decision in order. */
const takeN = (buckets: ReturnType<typeof makeTokenBuckets>, key: string, n: number) => Effect.forEach(Array.from({ length: n }), () => buckets.take(key))

describe("makeTokenBuckets", () => {
  it.effect("allows a burst of exactly `capacity` requests, then refuses with remaining 0 and Retry-After >= 1", () =>
    Effect.gen(function*() {
      const buckets = makeTokenBuckets(1, 5)
      const decisions = yield* takeN(buckets, "m1", 5)
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true])
      expect(decisions.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0])
      expect(decisions.every((d) => d.limit === 5)).toBe(true)

      const refused = yield* buckets.take("m1")
      expect(refused.allowed).toBe(false)
      expect(refused.limit).toBe(5)
      expect(refused.remaining).toBe(0)
      expect(Number.isInteger(refused.retryAfterSeconds)).toBe(true)
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1)
      // Refusals do not dig the bucket deeper: still refused with the same wait.
      const again = yield* buckets.take("m1")
      expect(again).toEqual(refused)
    }))

  it.effect("refills at the configured rate as the clock advances, never beyond capacity", () =>
    Effect.gen(function*() {
      const buckets = makeTokenBuckets(2, 4)
      yield* takeN(buckets, "k", 4)
      expect((yield* buckets.take("k")).allowed).toBe(false)

      // 2 tokens per second: half a second gives back exactly one.
      yield* TestClock.adjust("500 millis")
      const one = yield* buckets.take("k")
      expect(one).toMatchObject({ allowed: true, remaining: 0 })
      expect((yield* buckets.take("k")).allowed).toBe(false)

      // A long pause fills the bucket to its capacity and no further.
      yield* TestClock.adjust("1 hour")
      const burst = yield* takeN(buckets, "k", 5)
      expect(burst.map((d) => d.allowed)).toEqual([true, true, true, true, false])
      expect(burst.map((d) => d.remaining)).toEqual([3, 2, 1, 0, 0])
    }))

  it.effect("counts remaining in whole tokens while refilling fractionally", () =>
    Effect.gen(function*() {
      const buckets = makeTokenBuckets(1, 10)
      yield* takeN(buckets, "k", 10)
      yield* TestClock.adjust("2500 millis") // 2.5 tokens back
      expect(yield* buckets.take("k")).toMatchObject({ allowed: true, remaining: 1 }) // 1.5 left
      expect(yield* buckets.take("k")).toMatchObject({ allowed: true, remaining: 0 }) // 0.5 left
      expect(yield* buckets.take("k")).toMatchObject({ allowed: false, remaining: 0 })
      yield* TestClock.adjust("500 millis") // 1.0
      expect(yield* buckets.take("k")).toMatchObject({ allowed: true, remaining: 0 })
    }))

  it.effect("Retry-After is the whole seconds until one token is back, rounded up", () =>
    Effect.gen(function*() {
      const buckets = makeTokenBuckets(0.5, 2) // one token every 2 s
      yield* takeN(buckets, "k", 2)
      expect((yield* buckets.take("k")).retryAfterSeconds).toBe(2)
      yield* TestClock.adjust("1 second") // 0.5 token: 1 s more needed
      const waiting = yield* buckets.take("k")
      expect(waiting).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1 })
      yield* TestClock.adjust("1 second")
      expect((yield* buckets.take("k")).allowed).toBe(true)

      // Slow rates give long waits, but a fraction of a second is still at least 1.
      const slow = makeTokenBuckets(0.01, 1)
      yield* slow.take("s")
      expect((yield* slow.take("s")).retryAfterSeconds).toBe(100)
      const fast = makeTokenBuckets(1000, 1)
      yield* fast.take("f")
      expect((yield* fast.take("f")).retryAfterSeconds).toBe(1)
    }))

  it.effect("keeps separate keys independent", () =>
    Effect.gen(function*() {
      const buckets = makeTokenBuckets(1, 3)
      yield* takeN(buckets, "a", 3)
      expect((yield* buckets.take("a")).allowed).toBe(false)
      const b = yield* takeN(buckets, "b", 3)
      expect(b.map((d) => d.allowed)).toEqual([true, true, true])
      expect(b.map((d) => d.remaining)).toEqual([2, 1, 0])
      expect((yield* buckets.take("a")).allowed).toBe(false)
      // Two limiters never share state either.
      const other = makeTokenBuckets(1, 3)
      expect(yield* other.take("a")).toMatchObject({ allowed: true, remaining: 2 })
    }))

  it.effect("peek reports without consuming", () =>
    Effect.gen(function*() {
      const buckets = makeTokenBuckets(1, 2)
      // An unseen key: full.
      for (let i = 0; i < 5; i++) {
        expect(yield* buckets.peek("k")).toMatchObject({ allowed: true, limit: 2, remaining: 2 })
      }
      expect(yield* buckets.take("k")).toMatchObject({ allowed: true, remaining: 1 })
      expect(yield* buckets.peek("k")).toMatchObject({ allowed: true, remaining: 1 })
      expect(yield* buckets.peek("k")).toMatchObject({ allowed: true, remaining: 1 })
      expect(yield* buckets.take("k")).toMatchObject({ allowed: true, remaining: 0 })

      const empty = yield* buckets.peek("k")
      expect(empty.allowed).toBe(false)
      expect(empty.remaining).toBe(0)
      expect(empty.retryAfterSeconds).toBeGreaterThanOrEqual(1)
      // Peeking an empty bucket does not delay its refill.
      yield* TestClock.adjust("1 second")
      expect(yield* buckets.peek("k")).toMatchObject({ allowed: true, remaining: 1 })
      expect(yield* buckets.take("k")).toMatchObject({ allowed: true, remaining: 0 })
    }))

  it.effect("a rate of 0 never refills and asks for a long wait", () =>
    Effect.gen(function*() {
      const buckets = makeTokenBuckets(0, 1)
      yield* buckets.take("k")
      yield* TestClock.adjust("1 day")
      const refused = yield* buckets.take("k")
      expect(refused.allowed).toBe(false)
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1)
    }))

  it.effect("the memory sweep of many keys forgets only full buckets, never a drained one", () =>
    Effect.gen(function*() {
      const buckets = makeTokenBuckets(0.001, 2)
      yield* takeN(buckets, "drained", 2)
      // Enough distinct keys to trigger the sweep (full buckets are dropped then).
      for (let i = 0; i < 50_001; i++) yield* buckets.peek(`visitor-${i}`)
      expect(yield* buckets.take("drained")).toMatchObject({ allowed: false, remaining: 0 })
    }))
})
