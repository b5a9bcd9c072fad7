/**
 * Deposit wallets on the admin API: a merchant's wallets as saved (with the provider's wallet id),
 * and in test mode (CONTRACT 5.4) the simulated provider's controls: a payment to a wallet (sent
 * as the provider's signed callback), a wallet's status at the provider, and the provider's
 * availability (off: every call fails, the 502 path).
 */
import { HttpRouter } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { toUnits } from "../Domain/Money.js"
import { Merchants } from "../Merchants/Merchants.js"
import { AdminError, body, json, notFound, pathId } from "../Ops/AdminHttp.js"
import { WalletProviderSim } from "../Providers/Simulator/WalletProviderSim.js"
import { idempotencyKeyOf, WalletRequests } from "./WalletRequests.js"
import { Wallets } from "./Wallets.js"

const Payment = Schema.Struct({
  amount: Schema.Number.pipe(Schema.filter((n) =>
    (Number.isFinite(n) && n > 0 && n <= 1_000_000_000 && toUnits(n, 6) !== undefined) ||
    "amount must be a positive number of USDT with at most 6 decimals"
  )),
  tx_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
})
const ProviderStatus = Schema.Struct({ status: Schema.Literal("active", "disabled") })
const Availability = Schema.Struct({ available: Schema.Boolean })

/** USDT as a decimal text (no exponent), from its micro-units. */
const usdtText = (amount: number) => {
  const micros = toUnits(amount, 6)!
  const whole = micros / 1_000_000n
  const fraction = (micros % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "")
  return fraction === "" ? whole.toString() : `${whole}.${fraction}`
}

export const WalletAdminRoutes = Effect.gen(function*() {
  const requests = yield* WalletRequests
  const wallets = yield* Wallets
  const merchants = yield* Merchants
  const sim = yield* WalletProviderSim

  /** A saved wallet by the path's id that the simulated provider has created. */
  const createdWallet = Effect.gen(function*() {
    const id = yield* pathId
    const found = Schema.is(Schema.UUID)(id) ? yield* requests.byId(id).pipe(Effect.orDie) : Option.none()
    if (Option.isNone(found)) return yield* notFound("deposit wallet")
    return found.value
  })
  const notCreated = new AdminError({ status: 409, code: "ADMIN_CONFLICT", message: "the wallet provider has no bound wallet for this request yet" })

  return HttpRouter.empty.pipe(
    HttpRouter.get(
      "/admin/merchants/:id/wallets",
      Effect.gen(function*() {
        const merchant = yield* pathId.pipe(Effect.flatMap(merchants.get))
        if (Option.isNone(merchant)) return yield* notFound("merchant")
        const rows = yield* requests.listOf(merchant.value.id).pipe(Effect.orDie)
        return json({
          merchant_id: merchant.value.id,
          wallets: rows.map((row) => ({ ...wallets.view(row), provider_wallet_id: row.providerWalletId, provider_status: row.providerStatus }))
        })
      })
    ),
    HttpRouter.post(
      "/admin/simulator/wallets/:id/payments",
      Effect.gen(function*() {
        const wallet = yield* createdWallet
        const input = yield* body(Payment)
        const transferId = yield* sim.pay(idempotencyKeyOf(wallet.id), usdtText(input.amount), input.tx_id).pipe(
          Effect.catchTag("SimWalletNotFound", () => Effect.fail(notCreated))
        )
        return json({ wallet_id: wallet.id, transfer_id: transferId, amount: input.amount }, 202)
      })
    ),
    HttpRouter.post(
      "/admin/simulator/wallets/:id/status",
      Effect.gen(function*() {
        const wallet = yield* createdWallet
        const input = yield* body(ProviderStatus)
        yield* sim.setStatus(idempotencyKeyOf(wallet.id), input.status).pipe(Effect.catchTag("SimWalletNotFound", () => Effect.fail(notCreated)))
        return json({ wallet_id: wallet.id, provider_status: input.status })
      })
    ),
    HttpRouter.put(
      "/admin/simulator/wallet-provider",
      Effect.gen(function*() {
        const input = yield* body(Availability)
        yield* sim.setAvailable(input.available)
        return json(input)
      })
    )
  )
})
