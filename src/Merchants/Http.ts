import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { MerchantApi } from "../Api.js"
import { usd } from "../Domain/Money.js"
import { Ledger } from "../Ledger/Ledger.js"
import { CurrentMerchant } from "./Authentication.js"

export const BalanceHttp = HttpApiBuilder.group(MerchantApi, "balance", (handlers) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    return handlers.handle("getBalance", () =>
      Effect.gen(function*() {
        const merchant = yield* CurrentMerchant
        const row = yield* ledger.balance(merchant.id).pipe(Effect.orDie, Effect.flatMap(Effect.orDieWith(() => new Error("no balance row"))))
        return {
          available: usd(row.available),
          on_hold: usd(row.onHold),
          total_deposited: usd(row.totalDeposited),
          total_spent: usd(row.totalSpent),
          currency: "USD" as const,
          deposit_addresses: { trc20: row.trc20, bep20: row.bep20 }
        }
      }))
  }))

