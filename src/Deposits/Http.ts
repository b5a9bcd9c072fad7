import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { MerchantApi } from "../Api.js"
import { CurrentMerchant } from "../Merchants/Authentication.js"
import { Deposits } from "./Deposits.js"
import { FEE_TIERS } from "./Fees.js"

const fees = {
  currency: "USD" as const,
  tiers: FEE_TIERS.map((t) => ({ min_amount: t.minUsd, max_amount: t.maxUsd, percent: t.basisPoints / 100 }))
}

export const DepositsHttp = HttpApiBuilder.group(MerchantApi, "deposits", (handlers) =>
  Effect.gen(function*() {
    const deposits = yield* Deposits
    return handlers
      .handle("getFees", () => Effect.succeed(fees))
      .handle("listDeposits", ({ urlParams }) =>
        Effect.flatMap(CurrentMerchant, (merchant) =>
          deposits.list(merchant.id, { cursor: urlParams.cursor, limit: urlParams.limit ?? 50 })))
  }))
