/**
 * Deposits on the admin API: a confirmed payment credited through the real crediting path (the
 * operator's stand-in for the provider's confirmation), a merchant's deposit wallets as saved (with
 * the provider's wallet id), and in test mode (CONTRACT 5.4) the simulated provider's controls: a
 * payment to a wallet (sent as the provider's signed callback), a wallet's status at the provider,
 * and the provider's availability (off: every call fails, the 502 path).
 */
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { toUnits } from "../Domain/Money.js"
import { Merchants } from "../Merchants/Merchants.js"
import { AdminApi, AdminConflict, AdminInvalidRequest, IDEMPOTENT_REPLAYED } from "../Ops/AdminApi.js"
import { notFound, storable } from "../Ops/AdminHttp.js"
import { WalletProviderSim } from "../Providers/Simulator/WalletProviderSim.js"
import { Deposits } from "./Deposits.js"
import { Wallets } from "./Wallets.js"
import { idempotencyKeyOf, WalletsRepo } from "./WalletsRepo.js"

/** USDT as a decimal text (no exponent), from its micro-units. */
const usdtText = (amount: number) => {
  const micros = toUnits(amount, 6)!
  const whole = micros / 1_000_000n
  const fraction = (micros % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "")
  return fraction === "" ? whole.toString() : `${whole}.${fraction}`
}

export const AdminDepositsHttp = HttpApiBuilder.group(AdminApi, "deposits", (handlers) =>
  Effect.gen(function*() {
    const deposits = yield* Deposits
    const requests = yield* WalletsRepo
    const wallets = yield* Wallets
    const merchants = yield* Merchants
    const sim = yield* WalletProviderSim

    /** A saved wallet by its id that the simulated provider has created. */
    const createdWallet = (id: string) =>
      Effect.gen(function*() {
        const found = Schema.is(Schema.UUID)(id) ? yield* requests.byId(id).pipe(Effect.orDie) : Option.none()
        if (Option.isNone(found)) return yield* notFound("deposit wallet")
        return found.value
      })
    const notCreated = new AdminConflict({ message: "the wallet provider has no bound wallet for this request yet" })

    return handlers
      .handle("creditDeposit", ({ payload }) =>
        storable(payload).pipe(
          Effect.flatMap((input) => deposits.creditOnce({ merchantId: input.merchant_id, network: input.network, amount: input.amount, txId: input.tx_id })),
          // a repeated tx_id answers the first deposit, as the contract says, and says it is a repeat
          Effect.tap(({ credited }) =>
            credited ?
              Effect.void :
              HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, IDEMPOTENT_REPLAYED, "true")))
          ),
          Effect.map(({ deposit }) => deposit),
          Effect.catchTags({
            DepositMerchantNotFound: () => Effect.fail(notFound("merchant")),
            DepositAmountInvalid: (e) => Effect.fail(new AdminInvalidRequest({ message: e.message })),
            DepositTxIdConflict: (e) => Effect.fail(new AdminConflict({ message: `tx_id ${e.txId} was credited with another merchant, network or amount` }))
          })
        ))
      .handle("listMerchantWallets", ({ path }) =>
        Effect.gen(function*() {
          const merchant = yield* merchants.get(path.id)
          if (Option.isNone(merchant)) return yield* notFound("merchant")
          const rows = yield* requests.listOf(merchant.value.id).pipe(Effect.orDie)
          return {
            merchant_id: merchant.value.id,
            wallets: rows.map((row) => ({ ...wallets.view(row), provider_wallet_id: row.providerWalletId, provider_status: row.providerStatus }))
          }
        }))
      .handle("payWallet", ({ path, payload }) =>
        Effect.gen(function*() {
          const wallet = yield* createdWallet(path.id)
          const input = yield* storable(payload)
          const transferId = yield* sim.pay(idempotencyKeyOf(wallet.id), usdtText(input.amount), input.tx_id).pipe(
            Effect.catchTag("SimWalletNotFound", () => Effect.fail(notCreated))
          )
          return { wallet_id: wallet.id, transfer_id: transferId, amount: input.amount }
        }))
      .handle("setWalletStatus", ({ path, payload }) =>
        Effect.gen(function*() {
          const wallet = yield* createdWallet(path.id)
          yield* sim.setStatus(idempotencyKeyOf(wallet.id), payload.status).pipe(Effect.catchTag("SimWalletNotFound", () => Effect.fail(notCreated)))
          return { wallet_id: wallet.id, provider_status: payload.status }
        }))
      .handle("setWalletProvider", ({ payload }) => Effect.as(sim.setAvailable(payload.available), payload))
  }))
