import { HttpApiBuilder } from "@effect/platform"
import { Effect, Either, Option, Schema } from "effect"
import { MerchantApi } from "../Api.js"
import { DirectReads } from "../Db/Database.js"
import { usd } from "../Domain/Money.js"
import { fastGet, type FastRoute } from "../FastLane.js"
import { BALANCE_SQL, BalanceRow, Ledger } from "../Ledger/Ledger.js"
import type { Balance } from "./Api.js"
import { CurrentMerchant } from "./Authentication.js"

/** The response of GET /balance, in the order of the `Balance` schema. */
const balanceOf = (row: BalanceRow): typeof Balance.Type => ({
  available: usd(row.available),
  on_hold: usd(row.onHold),
  total_deposited: usd(row.totalDeposited),
  total_spent: usd(row.totalSpent),
  currency: "USD",
  deposit_addresses: { trc20: row.trc20, bep20: row.bep20 }
})

/** GET /balance of the current merchant (here and in the cabinet). */
export const getBalance = (ledger: Ledger) =>
  Effect.gen(function*() {
    const merchant = yield* CurrentMerchant
    const row = yield* ledger.balance(merchant.id).pipe(Effect.orDie, Effect.flatMap(Effect.orDieWith(() => new Error("no balance row"))))
    return balanceOf(row)
  })

export const BalanceHttp = HttpApiBuilder.group(MerchantApi, "balance", (handlers) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    return handlers.handle("getBalance", () => getBalance(ledger))
  }))

const decodeBalanceRow = Schema.decodeUnknownEither(BalanceRow)

/** An answer the fast lane leaves to the handler. */
const NOT_ANSWERED = Promise.resolve(undefined)

/**
 * GET /balance in the fast lane. On PostgreSQL: the same statement and body as the handler, read
 * straight on the pool; a failed read or a missing row goes back to the handler, which answers it.
 * On PGlite: the balance kept in memory (Ledger/BalanceCache.ts), when one is; otherwise the
 * handler reads it (and keeps it for the next request).
 */
export const BalanceFastRoutes = Effect.gen(function*() {
  const reads = yield* DirectReads
  const ledger = yield* Ledger
  return Option.match(reads, {
    onNone: (): ReadonlyArray<FastRoute> => [
      fastGet("balance", "getBalance", () => (merchant) => {
        const kept = ledger.keptBalance(merchant.id)
        return kept === undefined ? NOT_ANSWERED : JSON.stringify(balanceOf(kept))
      })
    ],
    onSome: (read): ReadonlyArray<FastRoute> => [
      fastGet("balance", "getBalance", () => (merchant) =>
        read(BALANCE_SQL, [merchant.id]).then((rows) =>
          rows.length === 1
            ? Either.getOrUndefined(Either.map(decodeBalanceRow(rows[0]), (row) => JSON.stringify(balanceOf(row))))
            : undefined
        ))
    ]
  })
})
