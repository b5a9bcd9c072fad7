/** `wallet ...`: a merchant's deposit wallets; in test mode, a payment to one (the provider's callback). */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { MerchantWallets, WalletPayment, WalletPaymentSent } from "../Ops/AdminApi.js"
import { call, checked, connection, connectionOptions, report, show } from "./Admin.js"
import { usdtAmount } from "./Deposit.js"
import { merchantIdArg } from "./Merchant.js"

const walletList = Command.make("list", { ...connectionOptions, merchantId: merchantIdArg }, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, (client) => client.deposits.listMerchantWallets({ path: { id: flags.merchantId } }))
    yield* report(conn, answer, MerchantWallets, (body) =>
      body.wallets.length === 0
        ? `merchant ${body.merchant_id} has no deposit wallets`
        : [
          `deposit wallets of merchant ${body.merchant_id}:`,
          ...body.wallets.map((w) =>
            `  ${w.id}  ${w.network.padEnd(4)}  ${w.status.padEnd(23)}  ${show(w.address)}${w.memo !== null ? ` (memo ${w.memo})` : ""}  ` +
            `provider ${show(w.provider_status)}  ${w.can_deposit ? "can deposit" : "do not send funds"}`
          )
        ].join("\n"))
  })).pipe(Command.withDescription("list a merchant's deposit wallets as saved"))

const walletPay = Command.make("pay", {
  ...connectionOptions,
  walletId: Args.text({ name: "WALLET_ID" }).pipe(Args.withDescription("the deposit wallet's id")),
  amount: usdtAmount,
  txId: Options.text("tx-id").pipe(Options.withDescription("the provider's transfer id; the same one twice credits once"), Options.optional)
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const payload = yield* checked(WalletPayment, { amount: flags.amount, tx_id: Option.getOrUndefined(flags.txId) })
    const answer = yield* call(conn, (client) => client.deposits.payWallet({ path: { id: flags.walletId }, payload }))
    yield* report(conn, answer, WalletPaymentSent, (body) =>
      `payment of ${flags.amount} USDT to wallet ${flags.walletId} sent by the simulated provider (transfer ${body.transfer_id}); ` +
      "its callback credits the merchant once it is verified")
  })).pipe(Command.withDescription("test mode: the simulated wallet provider pays into a wallet (a signed callback)"))

export const wallet = Command.make("wallet").pipe(
  Command.withDescription("deposit wallets"),
  Command.withSubcommands([walletList, walletPay])
)
