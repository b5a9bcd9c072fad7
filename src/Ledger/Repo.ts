/**
 * The SQL of the ledger (Ledger.ts): a merchant's balance row and its ledger rows, each change of
 * the one written beside the other (CHECKs in the schema keep available >= 0 and
 * available + total_spent = total_deposited; UNIQUE (kind, reference_id) makes each credit, debit
 * and refund happen at most once). A purchase's debit is written by the buy's own statement
 * (Purchases/BuyStatements.ts).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Int8 } from "../Domain/Db.js"

export const BalanceRow = Schema.Struct({
  available: Int8,
  onHold: Int8,
  totalDeposited: Int8,
  totalSpent: Int8,
  trc20: Schema.NullOr(Schema.String),
  bep20: Schema.NullOr(Schema.String)
})
export type BalanceRow = typeof BalanceRow.Type

/** The balance of merchant $1 (also read directly by the fast lane). */
export const BALANCE_SQL = `
  SELECT b.available_cents AS available, b.on_hold_cents AS "onHold",
         b.total_deposited_cents AS "totalDeposited", b.total_spent_cents AS "totalSpent",
         m.legacy_trc20 AS trc20, m.legacy_bep20 AS bep20
  FROM balances b JOIN merchants m ON m.id = b.merchant_id
  WHERE b.merchant_id = $1`

/** An amount of a merchant's, by what it pays for. */
const Movement = Schema.Struct({ merchantId: Schema.String, cents: Schema.Number, referenceId: Schema.String })
const AvailableAfter = Schema.Struct({ available: Int8 })

export class LedgerRepo extends Effect.Service<LedgerRepo>()("LedgerRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The merchant's balance, with the retained legacy deposit addresses. */
    const findBalance = SqlSchema.findOne({
      Request: Schema.String,
      Result: BalanceRow,
      execute: (merchantId) => sql.unsafe(BALANCE_SQL, [merchantId])
    })

    /**
     * Credits a confirmed deposit (`referenceId`: the deposit): available and total_deposited grow,
     * and the ledger row is written by the same statement. Available after; None for no balance row.
     */
    const creditDeposit = SqlSchema.findOne({
      Request: Movement,
      Result: AvailableAfter,
      execute: ({ cents, merchantId, referenceId }) =>
        sql`
          WITH credit AS (
            UPDATE balances SET available_cents = available_cents + ${cents},
                   total_deposited_cents = total_deposited_cents + ${cents}, updated_at = now()
            WHERE merchant_id = ${merchantId} RETURNING available_cents),
          entry AS (
            INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
            SELECT ${merchantId}, 'deposit_credit', ${cents}, available_cents, ${referenceId} FROM credit)
          SELECT available_cents AS available FROM credit`
    })

    /** Delivery: the purchase's amount leaves on_hold without crediting available. */
    const settlePurchase = SqlSchema.void({
      Request: Schema.Struct({ merchantId: Schema.String, cents: Schema.Number }),
      execute: ({ cents, merchantId }) =>
        sql`UPDATE balances SET on_hold_cents = on_hold_cents - ${cents}, updated_at = now() WHERE merchant_id = ${merchantId}`
    })

    const insertRefundRow = SqlSchema.findOne({
      Request: Movement,
      Result: Schema.Struct({}),
      execute: ({ cents, merchantId, referenceId }) =>
        sql`
          INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
          VALUES (${merchantId}, 'purchase_refund', ${cents}, 0, ${referenceId})
          ON CONFLICT (kind, reference_id) DO NOTHING RETURNING id`
    })
    /**
     * The ledger row of a purchase's refund (`referenceId`: the purchase), its balance after still
     * 0 (`setRefundAfter`): false, and nothing written, if the purchase was refunded already.
     */
    const insertRefund = (refund: typeof Movement.Type) => Effect.map(insertRefundRow(refund), Option.isSome)

    /** A refund's credit: available grows, total_spent shrinks, on_hold by `holdRelease`. Available after. */
    const creditRefund = SqlSchema.findOne({
      Request: Schema.Struct({ merchantId: Schema.String, cents: Schema.Number, holdRelease: Schema.Number }),
      Result: AvailableAfter,
      execute: ({ cents, holdRelease, merchantId }) =>
        sql`
          UPDATE balances SET available_cents = available_cents + ${cents}, total_spent_cents = total_spent_cents - ${cents},
                 on_hold_cents = on_hold_cents - ${holdRelease}, updated_at = now()
          WHERE merchant_id = ${merchantId} RETURNING available_cents AS available`
    })

    /** Records the balance a purchase's refund left on its ledger row (the one refund: unique on kind and reference). */
    const setRefundAfter = SqlSchema.void({
      Request: Schema.Struct({ purchaseId: Schema.String, available: Schema.Number }),
      execute: ({ available, purchaseId }) =>
        sql`UPDATE ledger_entries SET available_after_cents = ${available}
            WHERE kind = 'purchase_refund' AND reference_id = ${purchaseId}`
    })

    return { findBalance, creditDeposit, settlePurchase, insertRefund, creditRefund, setRefundAfter } as const
  })
}) {}
