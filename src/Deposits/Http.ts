import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { MerchantApi } from "../Api.js"
import { WalletCreationNotStarted, WalletIssuanceDisabled, WalletNotFound, WalletProviderUnavailable } from "../Domain/Errors.js"
import { CurrentMerchant } from "../Merchants/Api.js"
import { Deposits } from "./Deposits.js"
import { FEE_TIERS } from "./Fees.js"
import { Wallets } from "./Wallets.js"

const fees = {
  currency: "USD" as const,
  tiers: FEE_TIERS.map((t) => ({ min_amount: t.minUsd, max_amount: t.maxUsd, percent: t.basisPoints / 100 }))
}

export const DepositsHttp = HttpApiBuilder.group(MerchantApi, "deposits", (handlers) =>
  Effect.gen(function*() {
    const deposits = yield* Deposits
    const wallets = yield* Wallets
    const unverified = (e: { readonly detail: string }) =>
      Effect.fail(
        new WalletProviderUnavailable({
          message:
            `The wallet provider's state could not be verified (${e.detail}). Read the saved state (GET /deposits/wallets) before continuing; do not create a replacement.`
        })
      )
    return handlers
      .handle("getFees", () => Effect.succeed(fees))
      .handle("listDeposits", ({ urlParams }) =>
        Effect.flatMap(CurrentMerchant, (merchant) => deposits.list(merchant.id, { cursor: urlParams.cursor, limit: urlParams.limit ?? 50 })))
      .handle("listWallets", () =>
        Effect.flatMap(CurrentMerchant, wallets.list))
      .handle("requestWallet", ({ payload }) =>
        Effect.flatMap(CurrentMerchant, (merchant) => wallets.request(merchant, payload.network)).pipe(
          Effect.catchTags({
            WalletIssuanceOff: (e) => Effect.fail(new WalletIssuanceDisabled({ message: e.reason })),
            WalletUnverified: unverified
          })
        ))
      .handle("reconcileWallet", ({ path }) =>
        Effect.flatMap(CurrentMerchant, (merchant) => wallets.reconcile(merchant, path.walletId)).pipe(
          Effect.catchTags({
            WalletMissing: () => Effect.fail(new WalletNotFound({ message: "No such deposit wallet for this merchant." })),
            WalletNotStarted: () =>
              Effect.fail(
                new WalletCreationNotStarted({ message: "No creation attempt has started for this wallet: request it (POST /deposits/wallets) first." })
              ),
            WalletUnverified: unverified
          })
        ))
  }))
