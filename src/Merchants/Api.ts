/** The balance endpoint (spec 2.2, 4.1). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "./Authentication.js"

export const Usd = Schema.Number.annotations({ description: "USD, at most two decimals" })

export const Balance = Schema.Struct({
  available: Usd.annotations({ description: "Spendable now." }),
  on_hold: Usd.annotations({ description: "Sum of in-flight purchases; already debited." }),
  total_deposited: Usd.annotations({ description: "Lifetime sum of confirmed (credited) deposits." }),
  total_spent: Usd.annotations({ description: "Lifetime purchase debits minus refund credits." }),
  currency: Schema.Literal("USD"),
  deposit_addresses: Schema.Struct({
    trc20: Schema.NullOr(Schema.String),
    bep20: Schema.NullOr(Schema.String)
  }).annotations({ description: "The earlier provider's deposit addresses, when the operator set them." })
}).annotations({
  identifier: "Balance",
  // consistent money: available + total_spent = total_deposited, on_hold inside total_spent
  examples: [{
    available: 812.4,
    on_hold: 12.5,
    total_deposited: 1000,
    total_spent: 187.6,
    currency: "USD",
    deposit_addresses: { trc20: "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8", bep20: null }
  }]
})

export class BalanceApi extends HttpApiGroup.make("balance")
  .add(HttpApiEndpoint.get("getBalance", "/balance").addSuccess(Balance))
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Balance")
{}
