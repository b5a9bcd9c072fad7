/**
 * The merchants of API keys kept in memory, so that authenticating a request costs no query.
 *
 * - A key's merchant, once read, is used for `ttlMs`; changes are announced (`forget`, `clear`)
 *   and the age limit is only a safety net for a change not heard.
 * - A key in use is read again in the background once its entry is `refreshAfterMs` old, so a
 *   busy key never expires: otherwise every request arriving in the moment it did would read the
 *   database at once (50 connections meant 50 queries and a latency spike every 2 s).
 * - Reads of one key share one query (`read`); callers waiting on it get its result.
 * - A read that a change (any `forget` or `clear`) overlapped answers its caller but is not kept.
 * - A read that fails as `servesStaleOn` says (the database is out of reach) answers with the
 *   merchant read last for the key, however old: no change can be made while the database cannot
 *   be reached, and requests served from memory (the catalogue) go on through an outage. A change
 *   announced meanwhile (`forget`, `clear`) still drops the entry.
 */
import { type Cause, Clock, Effect, Fiber, FiberSet, Option } from "effect"

export interface KeyCacheOptions {
  /** How long a key's merchant may be used after it was read. */
  readonly ttlMs: number
  /** From this age, a use of the entry reads it again in the background. */
  readonly refreshAfterMs: number
  /** More keys than this and the cache starts over. */
  readonly maxEntries: number
  /** Failures of a read after which an expired entry is still used (none by default). */
  readonly servesStaleOn?: (cause: Cause.Cause<unknown>) => boolean
}

interface Entry<M> {
  readonly merchant: M
  /** When the read that found it started (the row was read at that time or later). */
  readonly readAt: number
}

export const makeKeyCache = <M extends { readonly id: string }>(
  /** The merchant of a key's hash (None: no merchant has that key, or it is revoked). */
  lookup: (hash: string) => Effect.Effect<Option.Option<M>>,
  options: KeyCacheOptions
) =>
  Effect.gen(function*() {
    // reads run in their own fibers (the scope's): a caller that gives up does not stop the read others wait on
    const reads = yield* FiberSet.make<Option.Option<M>>()
    const runRead = yield* FiberSet.runtime(reads)()
    const entries = new Map<string, Entry<M>>()
    const reading = new Map<string, Fiber.RuntimeFiber<Option.Option<M>>>()
    /** Counts the announced changes, so a read knows whether one overlapped it. */
    let changes = 0

    const keep = (hash: string, found: Option.Option<M>, readAt: number) => {
      if (Option.isNone(found)) {
        entries.delete(hash)
        return
      }
      if (!entries.has(hash) && entries.size >= options.maxEntries) entries.clear()
      entries.set(hash, { merchant: found.value, readAt })
    }

    /** The read of the key under way, or a new one. */
    const read = (hash: string): Fiber.RuntimeFiber<Option.Option<M>> => {
      const running = reading.get(hash)
      if (running !== undefined) return running
      const fiber = runRead(Effect.gen(function*() {
        const changesBefore = changes
        const readAt = yield* Clock.currentTimeMillis
        const found = yield* lookup(hash)
        if (changes === changesBefore) keep(hash, found, readAt)
        return found
      }))
      // a read may end before runRead returns (its observer then runs at once)
      reading.set(hash, fiber)
      fiber.addObserver(() => {
        if (reading.get(hash) === fiber) reading.delete(hash)
      })
      return fiber
    }

    /** The key's merchant if its entry is young enough (starting a background read once it ages), else undefined. */
    const peek = (hash: string, now: number): M | undefined => {
      const entry = entries.get(hash)
      if (entry === undefined) return undefined
      const age = now - entry.readAt
      if (age >= options.ttlMs) return undefined
      if (age >= options.refreshAfterMs) read(hash)
      return entry.merchant
    }

    /** The key's merchant: from memory, or read (sharing a read under way); an expired entry if the read fails as `servesStaleOn` says. */
    const get = (hash: string): Effect.Effect<Option.Option<M>> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const known = peek(hash, now)
        if (known !== undefined) return Effect.succeed(Option.some(known))
        const { servesStaleOn } = options
        if (servesStaleOn === undefined) return Fiber.join(read(hash))
        return Effect.catchAllCause(Fiber.join(read(hash)), (cause) => {
          // (looked up after the read: a change announced meanwhile has dropped it)
          const stale = entries.get(hash)
          return stale !== undefined && servesStaleOn(cause) ? Effect.succeed(Option.some(stale.merchant)) : Effect.failCause(cause)
        })
      })

    /** The merchant's keys may have changed: their entries go, and no read under way is kept. */
    const forget = (merchantId: string) => {
      changes++
      for (const [hash, entry] of entries) if (entry.merchant.id === merchantId) entries.delete(hash)
    }

    /** Any key may have changed unheard. */
    const clear = () => {
      changes++
      entries.clear()
    }

    /** Waits until no read is under way. */
    const settled = FiberSet.awaitEmpty(reads)

    return { get, peek, forget, clear, settled } as const
  })
