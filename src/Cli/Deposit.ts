/** `deposit simulate`: a confirmed provider payment through the real crediting path. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { DepositItem } from "../Deposits/Api.js"
import { IDEMPOTENT_REPLAYED, SimulatedDeposit } from "../Ops/AdminApi.js"
import { call, checked, connection, connectionOptions, lines, report, show } from "./Admin.js"
import { merchantIdArg } from "./Merchant.js"

export const usdtAmount = Args.text({ name: "AMOUNT" }).pipe(
  Args.withDescription("USDT sent, e.g. 102.50 (at most 6 decimals)"),
  Args.mapEffect((text) =>
    /^\d+(\.\d{1,6})?$/.test(text) && Number(text) > 0
      ? Effect.succeed(Number(text))
      : Effect.fail(HelpDoc.p(`AMOUNT must be a positive number of USDT with at most 6 decimals, got ${JSON.stringify(text)}`))
  )
)

const depositSimulate = Command.make("simulate", {
  ...connectionOptions,
  merchantId: merchantIdArg,
  amount: usdtAmount,
  network: Options.choice("network", ["tron", "bsc"]).pipe(
    Options.withDescription("the network the USDT came over (default: tron)"),
    Options.withDefault("tron" as const)
  ),
  txId: Options.text("tx-id").pipe(
    Options.withDescription("the provider's transaction id; the same one twice credits once"),
    Options.optional
  )
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const payload = yield* checked(SimulatedDeposit, {
      merchant_id: flags.merchantId,
      network: flags.network,
      amount: flags.amount,
      tx_id: Option.getOrUndefined(flags.txId)
    })
    // a tx_id credited before answers that first deposit, with a header saying it is a repeat
    let repeated = false
    const answer = yield* call(conn, (client) => client.deposits.creditDeposit({ payload }), {
      onResponse: (response) => {
        repeated = response.headers[IDEMPOTENT_REPLAYED] === "true"
      }
    })
    yield* report(conn, answer, DepositItem, (d) =>
      lines(
        repeated
          ? `already credited: deposit ${d.id} (${d.amount.toFixed(2)} ${d.currency} to merchant ${flags.merchantId}); nothing credited now`
          : `credited ${d.amount.toFixed(2)} ${d.currency} to merchant ${flags.merchantId}`,
        [
          ["deposit", d.id],
          ["sent", `${flags.amount} USDT over ${show(d.network)}`],
          ["tx_id", show(d.tx_id)],
          ["status", d.status]
        ]
      ))
  })).pipe(Command.withDescription("credit a confirmed provider payment through the real crediting path"))

export const deposit = Command.make("deposit").pipe(
  Command.withDescription("deposits"),
  Command.withSubcommands([depositSimulate])
)
