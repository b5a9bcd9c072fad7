/**
 * The merchants of API keys kept in memory (src/Merchants/KeyCache.ts), under the TestClock: one
 * read for callers that wait together, an entry in use read again in the background before it
 * expires, an unused one read again once it has, nothing kept that a change overlapped, and an
 * expired entry served while reads fail because the database is out of reach.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Option, TestClock } from "effect"
import { makeKeyCache } from "../../src/Merchants/KeyCache.js"

interface TestMerchant {
  readonly id: string
  readonly name: string
}

const OPTIONS = { ttlMs: 2_000, refreshAfterMs: 1_000, maxEntries: 100 }

/**
 * A lookup of key hashes in `owners` that counts its calls. While `hold` is set, a read says it
 * has started (`started`) and waits for the hold to be released.
 */
const directory = (owners: Record<string, TestMerchant | undefined>) => {
  const state = {
    lookups: 0,
    hold: undefined as Deferred.Deferred<void> | undefined,
    started: undefined as Deferred.Deferred<void> | undefined
  }
  const lookup = (hash: string) =>
    Effect.gen(function*() {
      state.lookups++
      const { hold, started } = state
      if (started !== undefined) yield* Deferred.succeed(started, undefined)
      if (hold !== undefined) yield* Deferred.await(hold)
      return Option.fromNullable(owners[hash])
    })
  /** Holds the reads that start from now on; the Deferreds to await their start and to release them. */
  const holdReads = Effect.gen(function*() {
    const hold = yield* Deferred.make<void>()
    const started = yield* Deferred.make<void>()
    state.hold = hold
    state.started = started
    return {
      started: Deferred.await(started),
      release: Effect.zipRight(
        Effect.sync(() => {
          state.hold = undefined
          state.started = undefined
        }),
        Deferred.succeed(hold, undefined)
      )
    }
  })
  return { state, lookup, holdReads, owners }
}

/** A cache over a counting lookup of `owners` (`directory`), both for the test to drive. */
const cacheOver = (owners: Record<string, TestMerchant | undefined>, options = OPTIONS) =>
  Effect.gen(function*() {
    const keys = directory(owners)
    const cache = yield* makeKeyCache(keys.lookup, options)
    return { keys, cache }
  })

/** The failure of a lookup that the cache may answer from an expired entry. */
class Unreachable extends Error {}

const alice: TestMerchant = { id: "m-alice", name: "Alice" }
const bob: TestMerchant = { id: "m-bob", name: "Bob" }

describe("KeyCache", () => {
  it.scoped("callers that ask for a key while it is read share the one read, and what it found is kept", () =>
    Effect.gen(function*() {
      const { cache, keys } = yield* cacheOver({ ka: alice })
      const held = yield* keys.holdReads
      const callers = yield* Effect.forEach(Array.from({ length: 20 }), () => Effect.fork(cache.get("ka")))
      yield* held.started
      yield* held.release
      for (const caller of callers) expect(yield* Fiber.join(caller)).toEqual(Option.some(alice))
      expect(keys.state.lookups).toBe(1)
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      expect(cache.peek("ka", 0)).toEqual(alice)
      expect(keys.state.lookups).toBe(1)
    }))

  it.scoped("callers of an unknown key share the read under way, and nothing is kept for it", () =>
    Effect.gen(function*() {
      const { cache, keys } = yield* cacheOver({})
      const held = yield* keys.holdReads
      const callers = yield* Effect.forEach(Array.from({ length: 20 }), () => Effect.fork(cache.get("unknown")))
      yield* held.started
      yield* held.release
      for (const caller of callers) expect(yield* Fiber.join(caller)).toEqual(Option.none())
      expect(keys.state.lookups).toBe(1)
      expect(yield* cache.get("unknown")).toEqual(Option.none())
      expect(keys.state.lookups).toBe(2)
    }))

  it.scoped("a key in use is read again in the background from its refresh age, so it never expires while used", () =>
    Effect.gen(function*() {
      const { cache, keys } = yield* cacheOver({ ka: alice })
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      // younger than the refresh age: served, nothing read
      yield* TestClock.adjust("999 millis")
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      expect(keys.state.lookups).toBe(1)

      // 1.5 s old: served at once while the read it starts is held
      yield* TestClock.adjust("501 millis")
      const second = yield* keys.holdReads
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      yield* Effect.yieldNow()
      expect(keys.state.lookups).toBe(2)
      yield* second.started
      // a second use meanwhile shares that read
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      expect(keys.state.lookups).toBe(2)
      yield* second.release
      yield* cache.settled

      // 2.5 s after the first read, past its age limit: the background read (at 1.5 s) is what serves
      yield* TestClock.adjust("1 second")
      const third = yield* keys.holdReads
      const answer = yield* Effect.fork(cache.get("ka"))
      yield* third.started
      expect(yield* Fiber.poll(answer)).toEqual(Option.some(Exit.succeed(Option.some(alice))))
      yield* third.release
      yield* cache.settled
      expect(keys.state.lookups).toBe(3)
    }))

  it.scoped("an entry not used until its age limit is read again before it is served", () =>
    Effect.gen(function*() {
      const { cache, keys } = yield* cacheOver({ ka: alice })
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      yield* TestClock.adjust("2 seconds")
      expect(cache.peek("ka", 2_000)).toBeUndefined()
      const held = yield* keys.holdReads
      const answer = yield* Effect.fork(cache.get("ka"))
      yield* held.started
      expect(yield* Fiber.poll(answer)).toEqual(Option.none())
      yield* held.release
      expect(yield* Fiber.join(answer)).toEqual(Option.some(alice))
      expect(keys.state.lookups).toBe(2)
    }))

  it.scoped("a key found revoked by a background read is refused from then on", () =>
    Effect.gen(function*() {
      const { cache, keys } = yield* cacheOver({ ka: alice })
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      keys.owners.ka = undefined
      yield* TestClock.adjust("1500 millis")
      // still within its age limit: served, and read again in the background
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      yield* cache.settled
      expect(cache.peek("ka", 1_500)).toBeUndefined()
      expect(yield* cache.get("ka")).toEqual(Option.none())
    }))

  it.scoped("a read that a change overlapped answers its callers but is not kept (forget and clear)", () =>
    Effect.gen(function*() {
      const { cache, keys } = yield* cacheOver({ ka: alice })
      for (const change of [() => cache.forget(alice.id), () => cache.clear()]) {
        const held = yield* keys.holdReads
        const answer = yield* Effect.fork(cache.get("ka"))
        yield* held.started
        change()
        yield* held.release
        expect(yield* Fiber.join(answer)).toEqual(Option.some(alice))
        expect(cache.peek("ka", 0)).toBeUndefined()
      }
      expect(keys.state.lookups).toBe(2)
      // a read with no change under way is kept
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      expect(cache.peek("ka", 0)).toEqual(alice)
    }))

  it.scoped("forget drops that merchant's keys only; clear drops every key", () =>
    Effect.gen(function*() {
      const { cache } = yield* cacheOver({ ka: alice, ka2: alice, kb: bob })
      yield* Effect.forEach(["ka", "ka2", "kb"], (hash) => cache.get(hash))
      cache.forget(alice.id)
      expect(cache.peek("ka", 0)).toBeUndefined()
      expect(cache.peek("ka2", 0)).toBeUndefined()
      expect(cache.peek("kb", 0)).toEqual(bob)
      cache.clear()
      expect(cache.peek("kb", 0)).toBeUndefined()
    }))

  it.scoped("a read that fails fails its callers, keeps nothing, and the next read is made afresh", () =>
    Effect.gen(function*() {
      const keys = directory({ ka: alice })
      let failures = 1
      const cache = yield* makeKeyCache(
        (hash) => failures-- > 0 ? Effect.die(new Error("connection lost")) : keys.lookup(hash),
        OPTIONS
      )
      const failed = yield* Effect.exit(cache.get("ka"))
      expect(Exit.isFailure(failed)).toBe(true)
      expect(cache.peek("ka", 0)).toBeUndefined()
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      expect(cache.peek("ka", 0)).toEqual(alice)
    }))

  it.scoped("while reads fail as servesStaleOn says, an expired entry is served; other failures fail; a change drops it", () =>
    Effect.gen(function*() {
      const keys = directory({ ka: alice, kb: bob })
      let failure: Error | undefined
      const cache = yield* makeKeyCache(
        (hash) => failure !== undefined ? Effect.die(failure) : keys.lookup(hash),
        { ...OPTIONS, servesStaleOn: (cause) => Cause.squash(cause) instanceof Unreachable }
      )
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      expect(yield* cache.get("kb")).toEqual(Option.some(bob))
      yield* TestClock.adjust("10 seconds")
      failure = new Unreachable("database out of reach")
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      // still expired: every use tries the database again
      expect(cache.peek("ka", 10_000)).toBeUndefined()
      // a key never read has nothing to serve
      expect(Exit.isFailure(yield* Effect.exit(cache.get("kc")))).toBe(true)
      // a failure of another kind fails its callers
      failure = new Error("syntax error")
      expect(Exit.isFailure(yield* Effect.exit(cache.get("ka")))).toBe(true)
      // an announced change drops the entry: nothing stale is served for it
      failure = new Unreachable("database out of reach")
      cache.forget(alice.id)
      expect(Exit.isFailure(yield* Effect.exit(cache.get("ka")))).toBe(true)
      expect(yield* cache.get("kb")).toEqual(Option.some(bob))
      // the database back: read afresh and kept
      failure = undefined
      expect(yield* cache.get("ka")).toEqual(Option.some(alice))
      expect(cache.peek("ka", 10_000)).toEqual(alice)
    }))

  it.scoped("more keys than maxEntries start the cache over", () =>
    Effect.gen(function*() {
      const { cache } = yield* cacheOver({ ka: alice, ka2: alice, kb: bob }, { ...OPTIONS, maxEntries: 2 })
      yield* Effect.forEach(["ka", "ka2"], (hash) => cache.get(hash))
      expect(cache.peek("ka", 0)).toEqual(alice)
      yield* cache.get("kb")
      expect(cache.peek("ka", 0)).toBeUndefined()
      expect(cache.peek("kb", 0)).toEqual(bob)
    }))
})
