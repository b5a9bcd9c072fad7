/**
 * The SQL of deposits (Deposits.ts, WalletPayments.ts): the credited deposits, idempotent on
 * tx_id, with the merchant's legacy addresses they may be sent to, and the wallet provider's
 * payments as recorded, once per transfer id. The deposit wallets' requests are WalletsRepo.ts's.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Int8, Timestamp } from "../Domain/Db.js"

export const DepositRow = Schema.Struct({
  id: Schema.UUID,
  merchantId: Schema.UUID,
  provider: Schema.String,
  network: Schema.NullOr(Schema.Literal("tron", "bsc")),
  destination: Schema.NullOr(Schema.String),
  txId: Schema.String,
  amountSentMicros: Int8,
  amount: Int8,
  createdAt: Timestamp,
  position: Schema.String
})
export type DepositRow = typeof DepositRow.Type

const NewDeposit = Schema.Struct({
  id: Schema.String,
  merchantId: Schema.String,
  provider: Schema.String,
  network: Schema.String,
  destination: Schema.NullOr(Schema.String),
  txId: Schema.String,
  /** int8 and bigint amounts as decimal text. */
  amountSentMicros: Schema.String,
  feeBasisPoints: Schema.Number,
  commissionCents: Schema.String,
  amountCents: Schema.String
})

const PaymentRecord = Schema.Struct({
  transferId: Schema.String,
  providerWalletId: Schema.String,
  walletId: Schema.NullOr(Schema.String),
  network: Schema.String,
  address: Schema.String,
  amount: Schema.String,
  txHash: Schema.NullOr(Schema.String),
  outcome: Schema.String,
  depositId: Schema.NullOr(Schema.String)
})

export class DepositsRepo extends Effect.Service<DepositsRepo>()("DepositsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // position: created_at to the microsecond, as a page's cursor holds it
    const columns = sql`
      id, merchant_id AS "merchantId", provider, network, destination, tx_id AS "txId",
      amount_sent_micros AS "amountSentMicros", amount_cents AS amount, created_at AS "createdAt",
      to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position`

    // ---- deposits --------------------------------------------------------------------------------

    /** The deposit of a tx_id. */
    const byTxId = SqlSchema.findOne({
      Request: Schema.String,
      Result: DepositRow,
      execute: (txId) => sql`SELECT ${columns} FROM deposits WHERE tx_id = ${txId}`
    })

    /** The merchant's addresses at the earlier provider; None for no such merchant. */
    const legacyAddresses = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ legacyTrc20: Schema.NullOr(Schema.String), legacyBep20: Schema.NullOr(Schema.String) }),
      execute: (merchantId) => sql`SELECT legacy_trc20 AS "legacyTrc20", legacy_bep20 AS "legacyBep20" FROM merchants WHERE id = ${merchantId}`
    })

    const insertDepositRow = SqlSchema.findOne({
      Request: NewDeposit,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (d) =>
        sql`
          INSERT INTO deposits (id, merchant_id, provider, network, destination, tx_id, amount_sent_micros,
                                fee_basis_points, commission_cents, amount_cents)
          VALUES (${d.id}, ${d.merchantId}, ${d.provider}, ${d.network},
                  ${d.destination}, ${d.txId}, ${d.amountSentMicros}, ${d.feeBasisPoints},
                  ${d.commissionCents}, ${d.amountCents})
          ON CONFLICT (tx_id) DO NOTHING RETURNING id`
    })
    /**
     * Saves a deposit: false when its tx_id has one already. Concurrent confirmations of one
     * tx_id: the unique index lets exactly one insert through.
     */
    const insertDeposit = (deposit: typeof NewDeposit.Type) => insertDepositRow(deposit).pipe(Effect.map(Option.isSome))

    /**
     * Up to `limit` of the merchant's deposits, newest first, then id ascending, after the position
     * `after` (created_at as `position` shows it, and id) when given.
     */
    const page = SqlSchema.findAll({
      Request: Schema.Struct({
        merchantId: Schema.String,
        after: Schema.UndefinedOr(Schema.Tuple(Schema.String, Schema.String)),
        limit: Schema.Number
      }),
      Result: DepositRow,
      execute: ({ after, limit, merchantId }) =>
        sql`
          SELECT ${columns} FROM deposits
          WHERE merchant_id = ${merchantId}
          ${after === undefined ? sql`` : sql`AND (created_at < ${after[0]}::timestamptz OR (created_at = ${after[0]}::timestamptz AND id > ${after[1]}))`}
          ORDER BY created_at DESC, id ASC
          LIMIT ${limit}`
    })

    // ---- wallet payments -------------------------------------------------------------------------

    const insertPayment = SqlSchema.findOne({
      Request: PaymentRecord,
      Result: Schema.Struct({}),
      execute: (p) =>
        sql`
          INSERT INTO wallet_payments (transfer_id, provider_wallet_id, wallet_id, network, address, amount, tx_hash, outcome, deposit_id)
          VALUES (${p.transferId}, ${p.providerWalletId}, ${p.walletId}, ${p.network}, ${p.address},
                  ${p.amount}, ${p.txHash}, ${p.outcome}, ${p.depositId})
          ON CONFLICT (transfer_id) DO NOTHING RETURNING 1`
    })
    /** Records a payment of the provider: false when its transfer id was recorded already. */
    const recordPayment = (payment: typeof PaymentRecord.Type) => insertPayment(payment).pipe(Effect.map(Option.isSome))

    /** The outcome recorded for a transfer id, if any. */
    const paymentOf = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ outcome: Schema.String }),
      execute: (transferId) => sql`SELECT outcome FROM wallet_payments WHERE transfer_id = ${transferId}`
    })

    return { withTransaction: sql.withTransaction, byTxId, legacyAddresses, insertDeposit, page, recordPayment, paymentOf } as const
  })
}) {}
