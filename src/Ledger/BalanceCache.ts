/**
 * Balances kept in memory on PGlite, so that `GET /balance` costs no query (a query through
 * PGlite's worker thread costs about 2 ms of CPU). It holds there because this process is the
 * database's only writer (Db/DataDirLock.ts) and every query and transaction holds PGlite's one
 * session in turn (Db/Pglite.ts): a read never runs inside another's transaction. Every change of
 * a balance or of what the Balance shows is announced with `changed`, from inside the transaction
 * that makes it (after it holds the session: a read that starts later waits for its commit), or
 * before and after a statement of its own. A read stores what it found only if no change of that
 * merchant was announced since it started. On PostgreSQL, where other processes write, nothing is
 * kept: the ledger's rows are read every time.
 */
import { Effect, Option } from "effect"
import { DirectTransactions } from "../Db/Database.js"

/** More merchants than this and the cache starts over. */
const KEPT_MAX = 100_000

export class BalanceCache extends Effect.Service<BalanceCache>()("BalanceCache", {
  effect: Effect.gen(function*() {
    // DirectTransactions exist on PostgreSQL only (a process tested alone, which provides none, is the only writer too)
    const direct = yield* Effect.serviceOption(DirectTransactions)
    const enabled = Option.isNone(Option.flatten(direct))
    const versions = new Map<string, number>()
    const kept = new Map<string, unknown>()

    /** A change of the merchant's balance (or of what its Balance shows) is being made. */
    const changedNow = (merchantId: string) => {
      if (!enabled) return
      versions.set(merchantId, (versions.get(merchantId) ?? 0) + 1)
      kept.delete(merchantId)
    }
    const changed = (merchantId: string) => Effect.sync(() => changedNow(merchantId))

    /** The merchant's balance row: kept, or read by `load` (and kept unless a change was announced meanwhile). */
    const read = <A, E, R>(merchantId: string, load: Effect.Effect<Option.Option<A>, E, R>): Effect.Effect<Option.Option<A>, E, R> =>
      enabled
        ? Effect.suspend(() => {
          if (kept.has(merchantId)) return Effect.succeed(Option.some(kept.get(merchantId) as A))
          const version = versions.get(merchantId) ?? 0
          return Effect.tap(load, (found) =>
            Effect.sync(() => {
              if (Option.isNone(found) || (versions.get(merchantId) ?? 0) !== version) return
              if (kept.size >= KEPT_MAX) kept.clear()
              kept.set(merchantId, found.value)
            }))
        })
        : load

    /** The merchant's kept balance row, if one is kept and is an `A` (the fast lane's read: no query, no fiber). */
    const peek = <A>(merchantId: string, is: (kept: unknown) => kept is A): A | undefined => {
      const value = kept.get(merchantId)
      return value !== undefined && is(value) ? value : undefined
    }

    return { changed, changedNow, read, peek } as const
  })
}) {}
