import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option, Runtime, Schema } from "effect"
import { MerchantApi } from "../Api.js"
import { DirectReads } from "../Db/Database.js"
import { usd } from "../Domain/Money.js"
import { type FastGet, fastGet } from "../FastRoutes.js"
import { BALANCE_SQL, BalanceRow, Ledger } from "../Ledger/Ledger.js"
import { type Balance, BalanceApi } from "./Api.js"
import { CurrentMerchant } from "./Api.js"

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

const decodeBalanceRow = Schema.decodeUnknownSync(BalanceRow)

/**
 * GET /balance's fast handler. On PostgreSQL: the same statement and body as the handler, read
 * straight on the pool (a row that is missing or does not decode fails, as the handler's read
 * does: 500). On PGlite: the balance kept in memory (Ledger/BalanceCache.ts), when one is;
 * otherwise the handler's own read (which keeps it for the next request).
 */
export const BalanceFastRoutes = Effect.gen(function*() {
  const reads = yield* DirectReads
  const ledger = yield* Ledger
  const run = Runtime.runPromise(yield* Effect.runtime<never>())
  return Option.match(reads, {
    onNone: (): ReadonlyArray<FastGet> => [
      fastGet({ group: BalanceApi }, () => (merchant) => {
        const kept = ledger.keptBalance(merchant.id)
        if (kept !== undefined) return JSON.stringify(balanceOf(kept))
        return run(Effect.provideService(getBalance(ledger), CurrentMerchant, merchant)).then((balance) => JSON.stringify(balance))
      })
    ],
    onSome: (read): ReadonlyArray<FastGet> => [
      fastGet({ group: BalanceApi }, () => (merchant) =>
        read(BALANCE_SQL, [merchant.id]).then((rows) => {
          if (rows.length !== 1) throw new Error("no balance row")
          return JSON.stringify(balanceOf(decodeBalanceRow(rows[0])))
        }))
    ]
  })
})
