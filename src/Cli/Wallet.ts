/** `wallet ...`: a merchant's deposit wallets; in test mode, a payment to one (the provider's callback). */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option, Schema } from "effect"
import { call, connection, connectionOptions, id, report, show } from "./Admin.js"
import { usdtAmount } from "./Deposit.js"
import { merchantIdArg } from "./Merchant.js"

const Wallets = Schema.Struct({
  merchant_id: Schema.String,
  wallets: Schema.Array(Schema.Struct({
    id: Schema.String,
    network: Schema.String,
    status: Schema.String,
    address: Schema.NullOr(Schema.String),
    memo: Schema.NullOr(Schema.String),
    can_deposit: Schema.Boolean,
    provider_status: Schema.NullOr(Schema.String)
  }))
})

const walletList = Command.make("list", { ...connectionOptions, merchantId: merchantIdArg }, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, "GET", `/admin/merchants/${id(flags.merchantId)}/wallets`)
    yield* report(conn, answer, Wallets, (body) =>
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
    const answer = yield* call(conn, "POST", `/admin/simulator/wallets/${id(flags.walletId)}/payments`, {
      amount: flags.amount,
      ...Option.match(flags.txId, { onNone: () => ({}), onSome: (txId) => ({ tx_id: txId }) })
    })
    yield* report(conn, answer, Schema.Struct({ transfer_id: Schema.String }), (body) =>
      `payment of ${flags.amount} USDT to wallet ${flags.walletId} sent by the simulated provider (transfer ${body.transfer_id}); ` +
      "its callback credits the merchant once it is verified")
  })).pipe(Command.withDescription("test mode: the simulated wallet provider pays into a wallet (a signed callback)"))

export const wallet = Command.make("wallet").pipe(
  Command.withDescription("deposit wallets"),
  Command.withSubcommands([walletList, walletPay])
)
