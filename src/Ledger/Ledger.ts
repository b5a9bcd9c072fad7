/**
 * The ledger: every change of a merchant's balance is a ledger row written in the same transaction
 * as the balance row's update (CHECKs in the schema keep available >= 0 and
 * available + total_spent = total_deposited). Each method must run inside the caller's
 * transaction, beside the state change it pays for. The UNIQUE (kind, reference_id) of the ledger
 * makes every credit, debit and refund happen at most once, whatever retries or crashes happen.
 * Each change is announced to the BalanceCache first (inside that transaction).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Int8 } from "../Domain/Db.js"
import { BalanceCache } from "./BalanceCache.js"

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

const isBalanceRow = Schema.is(BalanceRow)

const AvailableAfter = Schema.Struct({ available: Int8 })

export class Ledger extends Effect.Service<Ledger>()("Ledger", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* BalanceCache

    const findBalance = SqlSchema.findOne({
      Request: Schema.String,
      Result: BalanceRow,
      execute: (merchantId) => sql.unsafe(BALANCE_SQL, [merchantId])
    })
    /** Balance in cents, with the retained legacy deposit addresses (kept in memory on PGlite: BalanceCache.ts). */
    const balance = (merchantId: string) => cache.read(merchantId, findBalance(merchantId))
    /** The balance kept in memory (PGlite only), without a query: undefined when none is kept. */
    const keptBalance = (merchantId: string) => cache.peek(merchantId, isBalanceRow)

    const availableAfter = (rows: ReadonlyArray<unknown>) =>
      rows.length === 0 ? Option.none<number>() : Option.some(Schema.decodeUnknownSync(AvailableAfter)(rows[0]).available)

    /**
     * Credits a confirmed deposit: available and total_deposited grow, and the ledger row is
     * written by the same statement. Returns available after.
     */
    const creditDeposit = (merchantId: string, cents: number, depositId: string) =>
      Effect.gen(function*() {
        yield* cache.changed(merchantId)
        const rows = yield* sql`
          WITH credit AS (
            UPDATE balances SET available_cents = available_cents + ${cents},
                   total_deposited_cents = total_deposited_cents + ${cents}, updated_at = now()
            WHERE merchant_id = ${merchantId} RETURNING available_cents),
          entry AS (
            INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
            SELECT ${merchantId}, 'deposit_credit', ${cents}, available_cents, ${depositId} FROM credit)
          SELECT available_cents AS available FROM credit`
        return yield* Effect.orDieWith(availableAfter(rows), () => new Error(`no balance row for ${merchantId}`))
      })

    /**
     * The debit of a purchase's actual price, as steps of the caller's statement (WITH ...): the
     * CTE `debit` updates the balance if available covers the price (available shrinks, on_hold
     * and total_spent grow) and returns `available_cents` after it; the ledger row is written from
     * it. `debit` is empty, and nothing changed, when available is below the price.
     */
    const purchaseDebitSteps = (merchantId: string, cents: number, purchaseId: string) => {
      cache.changedNow(merchantId)
      return sql`
      debit AS (
        UPDATE balances SET available_cents = available_cents - ${cents}, on_hold_cents = on_hold_cents + ${cents},
               total_spent_cents = total_spent_cents + ${cents}, updated_at = now()
        WHERE merchant_id = ${merchantId} AND available_cents >= ${cents} RETURNING available_cents),
      debit_entry AS (
        INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
        SELECT ${merchantId}, 'purchase_debit', ${-cents}, available_cents, ${purchaseId} FROM debit)`
    }

    /** Delivery: the purchase leaves on_hold without crediting available. */
    const settlePurchase = (merchantId: string, cents: number) =>
      Effect.zipRight(
        cache.changed(merchantId),
        sql`UPDATE balances SET on_hold_cents = on_hold_cents - ${cents}, updated_at = now() WHERE merchant_id = ${merchantId}`
      )

    /**
     * Refunds a purchase in full, once: available grows, total_spent shrinks, and on_hold shrinks
     * if the purchase was still in flight. None if it was already refunded (nothing is changed).
     */
    const refundPurchase = (merchantId: string, cents: number, purchaseId: string, wasInFlight: boolean) =>
      Effect.gen(function*() {
        yield* cache.changed(merchantId)
        const inserted = yield* sql`
          INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
          VALUES (${merchantId}, 'purchase_refund', ${cents}, 0, ${purchaseId})
          ON CONFLICT (kind, reference_id) DO NOTHING RETURNING id`
        if (inserted.length === 0) return Option.none<number>()
        const holdRelease = wasInFlight ? cents : 0
        const rows = yield* sql`
          UPDATE balances SET available_cents = available_cents + ${cents}, total_spent_cents = total_spent_cents - ${cents},
                 on_hold_cents = on_hold_cents - ${holdRelease}, updated_at = now()
          WHERE merchant_id = ${merchantId} RETURNING available_cents AS available`
        const after = yield* Effect.orDieWith(availableAfter(rows), () => new Error(`no balance row for ${merchantId}`))
        // the entry is the one refund of this purchase (unique on kind and reference)
        yield* sql`UPDATE ledger_entries SET available_after_cents = ${after}
                   WHERE kind = 'purchase_refund' AND reference_id = ${purchaseId}`
        return Option.some(after)
      })

    return { balance, keptBalance, creditDeposit, purchaseDebitSteps, settlePurchase, refundPurchase } as const
  }),
  dependencies: [BalanceCache.Default]
}) {}
