/**
 * Payment callbacks in process, with a scripted provider whose verification says what the test
 * wants: a payment to a wallet nobody has is recorded and not credited; one that does not verify
 * changes nothing; a verified one to a bound wallet is credited once per transfer.
 */
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { createHash } from "node:crypto"
import { WalletPayments } from "../../src/Deposits/WalletPayments.js"
import { WalletsRepo } from "../../src/Deposits/WalletsRepo.js"
import { tronAddress } from "../../src/Domain/WalletAddress.js"
import { type PaymentNotice, WalletProvider } from "../../src/Providers/WalletProvider.js"
import { inProcess } from "../support/in-process.js"

/** The notice the next callback verifies as, or why it does not. */
let verdict: Either.Either<PaymentNotice, string> = Either.left("nothing scripted")
const ProviderTest = Layer.succeed(WalletProvider, {
  name: "walletpay",
  createWallet: () => Effect.die("not in this test"),
  findWallet: () => Effect.die("not in this test"),
  verifyCallback: () => Effect.sync(() => verdict)
})

const PaymentsTest = inProcess(Layer.merge(WalletPayments.Default, WalletsRepo.Default).pipe(Layer.provide(ProviderTest)))

const address = tronAddress(createHash("sha256").update("payments").digest())
const notice = (over: Partial<PaymentNotice>): PaymentNotice => ({
  transferId: crypto.randomUUID(),
  providerWalletId: "wp_test",
  network: "tron",
  address,
  amount: "102.5",
  txHash: null,
  walletStatus: "active",
  ...over
})

layer(PaymentsTest, { timeout: 60_000, excludeTestServices: true })("wallet payments", (it) => {
  it.effect("a callback that does not verify is rejected and records nothing", () =>
    Effect.gen(function*() {
      const payments = yield* WalletPayments
      const sql = yield* PgClient.PgClient
      verdict = Either.left("signature does not verify")
      const rejected = yield* Effect.flip(payments.receive({}, "{}"))
      expect(rejected).toMatchObject({ _tag: "CallbackRejected", reason: "signature does not verify" })
      expect(yield* sql`SELECT count(*)::int AS n FROM wallet_payments`).toEqual([{ n: 0 }])
    }))

  it.effect("a payment to a wallet nobody has is recorded and not credited; sent again, it is a repeat", () =>
    Effect.gen(function*() {
      const payments = yield* WalletPayments
      const sql = yield* PgClient.PgClient
      const unknown = notice({ providerWalletId: "wp_nobody" })
      verdict = Either.right(unknown)
      expect(yield* payments.receive({}, "{}")).toEqual({ transfer_id: unknown.transferId, outcome: "unknown_wallet" })
      expect(yield* payments.receive({}, "{}")).toEqual({ transfer_id: unknown.transferId, outcome: "repeat" })
      expect(yield* sql`SELECT outcome, deposit_id AS "depositId" FROM wallet_payments WHERE transfer_id = ${unknown.transferId}`)
        .toEqual([{ outcome: "unknown_wallet", depositId: null }])
      expect(yield* sql`SELECT count(*)::int AS n FROM deposits`).toEqual([{ n: 0 }])
    }))

  it.effect("a payment to a bound, active wallet is credited once, with the commission, to its address", () =>
    Effect.gen(function*() {
      const payments = yield* WalletPayments
      const sql = yield* PgClient.PgClient
      const merchantId = crypto.randomUUID()
      yield* sql`INSERT INTO merchants (id, name, webhook_secret) VALUES (${merchantId}, 'payee', 's')`
      yield* sql`INSERT INTO balances (merchant_id) VALUES (${merchantId})`
      yield* sql`INSERT INTO deposit_wallets (id, merchant_id, network, status, provider_wallet_id, address, provider_status)
                 VALUES (${crypto.randomUUID()}, ${merchantId}, 'tron', 'bound', 'wp_payee', ${address}, 'active')`
      const paid = notice({ providerWalletId: "wp_payee" })
      verdict = Either.right(paid)
      expect((yield* payments.receive({}, "{}")).outcome).toBe("credited")
      expect((yield* payments.receive({}, "{}")).outcome).toBe("repeat")
      expect(yield* sql`SELECT amount_cents::int AS cents, destination, provider, tx_id AS "txId" FROM deposits WHERE merchant_id = ${merchantId}`)
        .toEqual([{ cents: 10147, destination: address, provider: "walletpay", txId: paid.transferId }])
      // to the same wallet, but the provider says it is disabled now: recorded, not credited
      const disabled = notice({ providerWalletId: "wp_payee", walletStatus: "disabled" })
      verdict = Either.right(disabled)
      expect((yield* payments.receive({}, "{}")).outcome).toBe("wallet_disabled")
      expect(yield* sql`SELECT count(*)::int AS n FROM deposits WHERE merchant_id = ${merchantId}`).toEqual([{ n: 1 }])
    }))
})
