/**
 * Confirmed deposits: the crediting path (tier commission, ledger credit, `balance.deposited`
 * event, all in one transaction, idempotent on tx_id) and the merchant's list of credits.
 */
import { Data, Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import { CreatedAtIdPosition, decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import { toUnits, usd } from "../Domain/Money.js"
import { Ledger } from "../Ledger/Ledger.js"
import { Outbox } from "../Webhooks/Outbox.js"
import { settle } from "./Fees.js"
import { type DepositRow, DepositsRepo } from "./Repo.js"

/** The new USDT wallet provider, and the earlier provider whose addresses are retained. */
export const WALLET_PROVIDER = "walletpay"
export const LEGACY_PROVIDER = "legacy"

export type Network = "tron" | "bsc"

/** Far above any real payment, and keeps every amount in micro-USDT below 2^53. */
const MAX_DEPOSIT_USDT = 1_000_000_000

export class DepositMerchantNotFound extends Data.TaggedError("DepositMerchantNotFound")<{ readonly merchantId: string }> {}
export class DepositAmountInvalid extends Data.TaggedError("DepositAmountInvalid")<{ readonly message: string }> {}
export class DepositTxIdConflict extends Data.TaggedError("DepositTxIdConflict")<{ readonly txId: string }> {}

/** DepositItem of spec 2.4. */
export const toDepositItem = (row: DepositRow) => ({
  id: row.id,
  provider: row.provider,
  amount: usd(row.amount),
  currency: "USD" as const,
  network: row.network,
  destination: row.destination,
  tx_id: row.txId,
  status: "paid" as const,
  created_at: row.createdAt.toISOString()
})
export type DepositItem = ReturnType<typeof toDepositItem>

export interface CreditRequest {
  readonly merchantId: string
  readonly network: Network
  /** USDT sent, as the JSON number given. */
  readonly amount: number
  readonly txId?: string | undefined
  /**
   * A payment to one of the merchant's deposit wallets: its address is the destination. Without
   * it, a payment confirmed by the operator: to the earlier provider's address when the merchant
   * has one for the network.
   */
  readonly wallet?: { readonly address: string } | undefined
}

export class Deposits extends Effect.Service<Deposits>()("Deposits", {
  effect: Effect.gen(function*() {
    const repo = yield* DepositsRepo
    const ledger = yield* Ledger
    const outbox = yield* Outbox

    /**
     * Credits a confirmed payment once per tx_id. A repeat with the same tx_id returns the first
     * deposit and credits nothing (`credited` false); the same tx_id for another merchant, network
     * or amount is a conflict.
     */
    const creditOnce = (request: CreditRequest) =>
      Effect.gen(function*() {
        const sentMicros = Number.isFinite(request.amount) && request.amount > 0 && request.amount <= MAX_DEPOSIT_USDT
          ? toUnits(request.amount, 6)
          : undefined
        if (sentMicros === undefined) {
          return yield* new DepositAmountInvalid({
            message: `amount must be a positive number of USDT up to ${MAX_DEPOSIT_USDT} with at most 6 decimals`
          })
        }
        const settlement = settle(sentMicros)
        if (settlement.creditedCents <= 0n) {
          return yield* new DepositAmountInvalid({ message: "amount is too small to credit a cent after the commission" })
        }
        const txId = request.txId ?? `internal-${randomUUID()}`
        const sameDeposit = (row: DepositRow) =>
          row.merchantId === request.merchantId && row.network === request.network && BigInt(row.amountSentMicros) === sentMicros
            ? Effect.succeed({ row, credited: false })
            : Effect.fail(new DepositTxIdConflict({ txId }))

        const existing = yield* repo.byTxId(txId)
        if (Option.isSome(existing)) return yield* sameDeposit(existing.value)

        return yield* repo.withTransaction(Effect.gen(function*() {
          const merchant = yield* repo.legacyAddresses(request.merchantId)
          if (Option.isNone(merchant)) return yield* new DepositMerchantNotFound({ merchantId: request.merchantId })
          const legacy = request.wallet !== undefined ? null : request.network === "tron" ? merchant.value.legacyTrc20 : merchant.value.legacyBep20
          const destination = request.wallet?.address ?? legacy
          const id = randomUUID()
          // Concurrent confirmations of one tx_id: the unique index lets exactly one insert through.
          const inserted = yield* repo.insertDeposit({
            id,
            merchantId: request.merchantId,
            provider: legacy === null ? WALLET_PROVIDER : LEGACY_PROVIDER,
            network: request.network,
            destination,
            txId,
            amountSentMicros: sentMicros.toString(),
            feeBasisPoints: settlement.basisPoints,
            commissionCents: settlement.commissionCents.toString(),
            amountCents: settlement.creditedCents.toString()
          })
          if (!inserted) {
            const raced = yield* repo.byTxId(txId)
            return yield* sameDeposit(Option.getOrThrow(raced))
          }
          const credited = Number(settlement.creditedCents)
          const balanceAfter = yield* ledger.creditDeposit(request.merchantId, credited, id)
          const row = Option.getOrThrow(yield* repo.byTxId(txId))
          yield* outbox.enqueue({
            merchantId: request.merchantId,
            type: "balance.deposited",
            orderId: null,
            data: {
              deposit_id: id,
              amount: usd(credited),
              currency: "USD",
              network: request.network,
              tx_id: txId,
              balance_after: usd(balanceAfter)
            }
          })
          return { row, credited: true }
        }))
      }).pipe(
        Effect.map(({ credited, row }) => ({ deposit: toDepositItem(row), credited })),
        Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }),
        Effect.withSpan("Deposits.credit")
      )

    /** Confirmed credits, newest first, then id ascending (spec 4.1). */
    const list = (merchantId: string, options: { readonly cursor: string | undefined; readonly limit: number }) =>
      Effect.gen(function*() {
        const after = options.cursor === undefined ? undefined : yield* decodeCursor(CreatedAtIdPosition, options.cursor)
        // one more than a page: whether there is a next one
        const rows = yield* repo.page({ merchantId, after, limit: options.limit + 1 }).pipe(Effect.orDie)
        const page = rows.slice(0, options.limit)
        const last = page[page.length - 1]
        return {
          deposits: page.map(toDepositItem),
          next_cursor: rows.length > options.limit && last !== undefined ? encodeCursor([last.position, last.id]) : null
        }
      }).pipe(Effect.withSpan("Deposits.list"))

    /** `creditOnce`'s deposit alone: what every caller but the operator's needs. */
    const credit = (request: CreditRequest) => Effect.map(creditOnce(request), ({ deposit }) => deposit)

    return { credit, creditOnce, list } as const
  }),
  dependencies: [DepositsRepo.Default, Ledger.Default, Outbox.Default]
}) {}
