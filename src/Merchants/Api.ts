/**
 * The merchant's contract: the balance endpoint (spec 2.2, 4.1), and the authentication
 * middlewares every merchant group names (spec 5, CONTRACT 2, 6 and 7). The middlewares are
 * declared here, with what they provide and how they fail; Authentication.ts implements them.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, Schema } from "effect"
import { Wire } from "../Domain/Errors.js"
import type { AuthenticatedMerchant } from "../Domain/Merchant.js"

/** The merchant a request authenticated as, provided by each of the middlewares below. */
export class CurrentMerchant extends Context.Tag("CurrentMerchant")<CurrentMerchant, AuthenticatedMerchant>() {}

/** A Bearer API key: every merchant route but the deposit endpoints. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  provides: CurrentMerchant,
  failure: Schema.Union(Wire.ApiKeyMissing, Wire.MerchantBlocked, Wire.MerchantNotActive, Wire.RateLimited),
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/** The cabinet's session cookie (CONTRACT 7). */
export const SESSION_COOKIE = "mer_session"
const sessionSecurity = HttpApiSecurity.apiKey({ in: "cookie", key: SESSION_COOKIE })

/** The deposit endpoints: a Bearer key, or the cabinet's session (the key decides when both come). */
export class KeyOrSession extends HttpApiMiddleware.Tag<KeyOrSession>()("KeyOrSession", {
  provides: CurrentMerchant,
  failure: Schema.Union(Wire.ApiKeyMissing, Wire.MerchantBlocked, Wire.MerchantNotActive, Wire.RateLimited, Wire.OriginNotAllowed),
  security: { bearer: HttpApiSecurity.bearer, session: sessionSecurity }
}) {}

/** The cabinet's JSON endpoints: the session only. */
export class CabinetSession extends HttpApiMiddleware.Tag<CabinetSession>()("CabinetSession", {
  provides: CurrentMerchant,
  failure: Schema.Union(Wire.CabinetSessionRequired, Wire.RateLimited, Wire.OriginNotAllowed),
  security: { session: sessionSecurity }
}) {}

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
