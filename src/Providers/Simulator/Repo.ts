/**
 * The SQL of the simulated providers' own records, kept in the database as a real provider keeps
 * them on its side: the purchase provider's order book (ProviderSim.ts) and the wallet provider's
 * signing secret and wallets (WalletProviderSim.ts).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { rowsOf } from "../../Domain/Db.js"

export const OrderRow = Schema.Struct({
  requestId: Schema.String,
  outcome: Schema.Literal("completed", "failed", "reverted"),
  failureCode: Schema.NullOr(Schema.String),
  acknowledgedAt: Schema.NullOr(Schema.DateFromSelf),
  topupUntil: Schema.NullOr(Schema.DateFromSelf),
  offerAt: Schema.NullOr(Schema.DateFromSelf),
  decisionAt: Schema.DateFromSelf,
  reversalAt: Schema.NullOr(Schema.DateFromSelf),
  tradeOfferId: Schema.NullOr(Schema.String)
})
export type OrderRow = typeof OrderRow.Type

const ORDER_COLUMNS = `request_id AS "requestId", outcome, failure_code AS "failureCode", acknowledged_at AS "acknowledgedAt",
  topup_until AS "topupUntil", offer_at AS "offerAt", decision_at AS "decisionAt", reversal_at AS "reversalAt",
  trade_offer_id AS "tradeOfferId"`

/** A new order as sim_provider_orders stores it (its columns; a type, so that sql.insert takes it). */
export type NewOrder = {
  readonly request_id: string
  readonly purchase_id: string
  readonly outcome: OrderRow["outcome"]
  readonly failure_code: string | null
  readonly acknowledged_at: Date | null
  readonly topup_until: Date | null
  readonly offer_at: Date | null
  readonly decision_at: Date
  readonly reversal_at: Date | null
  readonly trade_offer_id: string | null
}

export const SimWalletRow = Schema.Struct({
  providerWalletId: Schema.String,
  network: Schema.Literal("tron", "bsc"),
  address: Schema.String,
  memo: Schema.NullOr(Schema.String),
  status: Schema.Literal("active", "disabled"),
  bindsAt: Schema.Union(Schema.DateFromSelf, Schema.DateFromString),
  responseLost: Schema.Boolean
})
export type SimWalletRow = typeof SimWalletRow.Type
const simColumns = `provider_wallet_id AS "providerWalletId", network, address, memo, status,
  binds_at AS "bindsAt", response_lost AS "responseLost"`

export class SimulatorRepo extends Effect.Service<SimulatorRepo>()("SimulatorRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The order placed with this request id. */
    const findOrder = SqlSchema.findOne({
      Request: Schema.String,
      Result: OrderRow,
      execute: (requestId) => sql`SELECT ${sql.literal(ORDER_COLUMNS)} FROM sim_provider_orders WHERE request_id = ${requestId}`
    })

    /**
     * Writes the orders and reads them back in one statement. An order placed before is read by the
     * same statement, unless it was placed concurrently (committed after the statement's snapshot):
     * then it is not among the rows.
     */
    const placeOrders = (orders: ReadonlyArray<NewOrder>) =>
      sql`
        WITH placed AS (
          INSERT INTO sim_provider_orders ${sql.insert(orders)}
          ON CONFLICT (request_id) DO NOTHING
          RETURNING ${sql.literal(ORDER_COLUMNS)})
        SELECT * FROM placed
        UNION ALL
        SELECT ${sql.literal(ORDER_COLUMNS)} FROM sim_provider_orders
        WHERE request_id IN ${sql.in(orders.map((o) => o.request_id))} AND request_id NOT IN (SELECT "requestId" FROM placed)`.pipe(
        rowsOf(OrderRow)
      )

    /** Stores this secret as the wallet provider's signing secret, unless one is stored already. */
    const insertSecret = (secret: string) => sql`INSERT INTO sim_wallet_provider_secret (secret) VALUES (${secret}) ON CONFLICT DO NOTHING`.pipe(Effect.asVoid)

    /** The wallet provider's signing secret. */
    const readSecret = SqlSchema.single({
      Request: Schema.Void,
      Result: Schema.Struct({ secret: Schema.String }),
      execute: () => sql`SELECT secret FROM sim_wallet_provider_secret`
    })(undefined)

    /** The wallet created for this idempotency key. */
    const findWallet = SqlSchema.findOne({
      Request: Schema.String,
      Result: SimWalletRow,
      execute: (key) => sql`SELECT ${sql.literal(simColumns)} FROM sim_wallet_provider_wallets WHERE idempotency_key = ${key}`
    })

    /** Creates the wallet, its address bound `bindSeconds` from now; nothing when the key has one already. */
    const insertWallet = (wallet: {
      readonly idempotencyKey: string
      readonly providerWalletId: string
      readonly merchantId: string
      readonly network: SimWalletRow["network"]
      readonly address: string
      readonly bindSeconds: number
    }) =>
      sql`
        INSERT INTO sim_wallet_provider_wallets (idempotency_key, provider_wallet_id, merchant_id, network, address, binds_at)
        VALUES (${wallet.idempotencyKey}, ${wallet.providerWalletId}, ${wallet.merchantId},
                ${wallet.network}, ${wallet.address},
                now() + make_interval(secs => ${wallet.bindSeconds}))
        ON CONFLICT (idempotency_key) DO NOTHING`.pipe(Effect.asVoid)

    /** Records that the answer to the wallet's creation was lost (it is lost once). */
    const markResponseLost = (idempotencyKey: string) =>
      sql`UPDATE sim_wallet_provider_wallets SET response_lost = true WHERE idempotency_key = ${idempotencyKey}`.pipe(Effect.asVoid)

    /** Sets the wallet's status; whether there is such a wallet. */
    const setWalletStatus = (idempotencyKey: string, status: SimWalletRow["status"]) =>
      sql`UPDATE sim_wallet_provider_wallets SET status = ${status} WHERE idempotency_key = ${idempotencyKey} RETURNING 1`.pipe(
        Effect.map((rows) => rows.length > 0)
      )

    return { findOrder, placeOrders, insertSecret, readSecret, findWallet, insertWallet, markResponseLost, setWalletStatus } as const
  })
}) {}
