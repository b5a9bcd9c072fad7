/**
 * Payments to deposit wallets, as the wallet provider reports them in signed callbacks (CONTRACT
 * 5.4). A callback that does not verify changes nothing. A verified one is recorded once per
 * transfer id; it is credited through the one crediting path (tier commission, ledger,
 * `balance.deposited`, idempotent on the transfer id) only to a bound wallet whose provider status
 * is active; for an unknown, unbound or disabled wallet it is recorded and not credited (an
 * operator settles it by hand).
 */
import { Data, Effect, Either, Option } from "effect"
import { Metrics } from "../Ops/Metrics.js"
import { type PaymentNotice, WalletProvider } from "../Providers/WalletProvider.js"
import { Deposits } from "./Deposits.js"
import { DepositsRepo } from "./Repo.js"
import { WalletsRepo } from "./WalletsRepo.js"

export class CallbackRejected extends Data.TaggedError("CallbackRejected")<{ readonly reason: string }> {}

export type PaymentOutcome = "credited" | "unknown_wallet" | "wallet_disabled" | "wallet_not_bound" | "invalid_amount"

export class WalletPayments extends Effect.Service<WalletPayments>()("WalletPayments", {
  effect: Effect.gen(function*() {
    const repo = yield* DepositsRepo
    const provider = yield* WalletProvider
    const requests = yield* WalletsRepo
    const deposits = yield* Deposits
    const metrics = yield* Metrics
    const callbacks = metrics.counter({
      name: "wallet_payment_callbacks_total",
      help: "Payment callbacks of the wallet provider, by outcome (rejected: did not verify; repeat: transfer already recorded)",
      labelNames: ["outcome"]
    })

    const record = (notice: PaymentNotice, walletId: string | null, outcome: PaymentOutcome, depositId: string | null) =>
      repo.recordPayment({
        transferId: notice.transferId,
        providerWalletId: notice.providerWalletId,
        walletId,
        network: notice.network,
        address: notice.address,
        amount: notice.amount,
        txHash: notice.txHash,
        outcome,
        depositId
      })

    /** What becomes of a verified payment. */
    const apply = (notice: PaymentNotice) =>
      Effect.gen(function*() {
        const found = yield* requests.byProviderWallet(notice.providerWalletId)
        if (Option.isNone(found) || found.value.network !== notice.network) {
          return yield* record(notice, null, "unknown_wallet", null).pipe(Effect.as("unknown_wallet" as const))
        }
        const wallet = found.value
        const notPayable: PaymentOutcome | undefined = wallet.status !== "bound" || wallet.address !== notice.address ?
          "wallet_not_bound"
          : wallet.providerStatus !== "active" || notice.walletStatus !== "active" ?
          "wallet_disabled"
          : undefined
        if (notPayable !== undefined) return yield* record(notice, wallet.id, notPayable, null).pipe(Effect.as(notPayable))
        // credited first (idempotent on the transfer id), recorded after: a crash between the two,
        // and the provider's retry credits nothing twice and records it then
        const credited = yield* deposits.credit({
          merchantId: wallet.merchantId,
          network: wallet.network,
          amount: Number(notice.amount),
          txId: notice.transferId,
          wallet: { address: wallet.address! }
        }).pipe(Effect.either)
        if (Either.isLeft(credited)) {
          yield* Effect.logWarning("wallet payment not credited", credited.left).pipe(Effect.annotateLogs({ transfer_id: notice.transferId }))
          return yield* record(notice, wallet.id, "invalid_amount", null).pipe(Effect.as("invalid_amount" as const))
        }
        yield* record(notice, wallet.id, "credited", credited.right.id)
        return "credited" as const
      })

    /** A callback as received: rejected unless it verifies; otherwise its payment's outcome. */
    const receive = (headers: Readonly<Record<string, string | undefined>>, rawBody: string) =>
      Effect.gen(function*() {
        const verified = yield* provider.verifyCallback(headers, rawBody)
        if (Either.isLeft(verified)) {
          callbacks.inc({ outcome: "rejected" })
          return yield* new CallbackRejected({ reason: verified.left })
        }
        const notice = verified.right
        const seen = yield* repo.paymentOf(notice.transferId)
        const outcome = Option.isSome(seen) ? "repeat" : yield* apply(notice)
        callbacks.inc({ outcome })
        return { transfer_id: notice.transferId, outcome }
      }).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }), Effect.withSpan("WalletPayments.receive"))

    return { receive } as const
  }),
  dependencies: [DepositsRepo.Default, WalletsRepo.Default, Deposits.Default, Metrics.Default]
}) {}
