/**
 * The SQL of deposit wallets: the durable request per merchant and network and its moves between
 * the states of spec 3.2, each a conditional update (so two requests never both move one wallet).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { CountRow, rowsOf } from "../Domain/Db.js"
import type { Network } from "../Domain/WalletAddress.js"

export const WalletStatus = Schema.Literal("prepared", "creation_started", "requires_reconciliation", "bound")
export type WalletStatus = typeof WalletStatus.Type

export const WalletRow = Schema.Struct({
  id: Schema.String,
  merchantId: Schema.String,
  network: Schema.Literal("tron", "bsc"),
  status: WalletStatus,
  providerWalletId: Schema.NullOr(Schema.String),
  address: Schema.NullOr(Schema.String),
  memo: Schema.NullOr(Schema.String),
  providerStatus: Schema.NullOr(Schema.Literal("active", "disabled")),
  createdAt: Schema.DateFromSelf,
  updatedAt: Schema.DateFromSelf
})
export type WalletRow = typeof WalletRow.Type

/** The provider's idempotency key of a wallet request: derived from it, the same on every try. */
export const idempotencyKeyOf = (walletId: string) => `dw_${walletId}`

export class WalletRequests extends Effect.Service<WalletRequests>()("WalletRequests", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`
      id, merchant_id AS "merchantId", network, status, provider_wallet_id AS "providerWalletId", address, memo,
      provider_status AS "providerStatus", created_at AS "createdAt", updated_at AS "updatedAt"`

    const listOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: WalletRow,
      execute: (merchantId) => sql`SELECT ${columns} FROM deposit_wallets WHERE merchant_id = ${merchantId} ORDER BY network`
    })
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: WalletRow,
      execute: (id) => sql`SELECT ${columns} FROM deposit_wallets WHERE id = ${id}`
    })
    const byProviderWallet = SqlSchema.findOne({
      Request: Schema.String,
      Result: WalletRow,
      execute: (providerWalletId) => sql`SELECT ${columns} FROM deposit_wallets WHERE provider_wallet_id = ${providerWalletId}`
    })
    const walletRows = rowsOf(WalletRow)
    const returning = <E>(statement: Effect.Effect<ReadonlyArray<unknown>, E>) => Effect.map(walletRows(statement), (rows): WalletRow | undefined => rows[0])

    /** The merchant's request for the network, written as `prepared` if it has none yet. */
    const prepare = (merchantId: string, network: Network) =>
      Effect.gen(function*() {
        yield* sql`INSERT INTO deposit_wallets (id, merchant_id, network) VALUES (${randomUUID()}, ${merchantId}, ${network})
                   ON CONFLICT (merchant_id, network) DO NOTHING`
        const rows = yield* sql`SELECT ${columns} FROM deposit_wallets WHERE merchant_id = ${merchantId} AND network = ${network}`.pipe(
          walletRows
        )
        return rows[0]!
      })

    /** Moves the request from `from` to `to` (and sets `set`); undefined when it was not in `from` (another request moved it). */
    const move = (id: string, from: ReadonlyArray<WalletStatus>, to: WalletStatus, set: {
      readonly providerWalletId?: string | null
      readonly address?: string | null
      readonly memo?: string | null
      readonly providerStatus?: "active" | "disabled" | null
    } = {}) =>
      returning(sql`
        UPDATE deposit_wallets SET status = ${to}, updated_at = now()
          ${set.providerWalletId !== undefined ? sql`, provider_wallet_id = ${set.providerWalletId}` : sql``}
          ${set.address !== undefined ? sql`, address = ${set.address}` : sql``}
          ${set.memo !== undefined ? sql`, memo = ${set.memo}` : sql``}
          ${set.providerStatus !== undefined ? sql`, provider_status = ${set.providerStatus}` : sql``}
        WHERE id = ${id} AND status IN ${sql.in(from)}
        RETURNING ${columns}`)

    /** The provider's status of a bound wallet (its address and memo never change). */
    const refreshStatus = (id: string, providerStatus: "active" | "disabled") =>
      returning(sql`
        UPDATE deposit_wallets SET provider_status = ${providerStatus},
          updated_at = CASE WHEN provider_status = ${providerStatus} THEN updated_at ELSE now() END
        WHERE id = ${id} AND status = 'bound' RETURNING ${columns}`)

    /** Wallet requests by state, for /metrics. */
    const countByState = sql`SELECT status, count(*) AS n FROM deposit_wallets GROUP BY status`.pipe(
      rowsOf(Schema.Struct({ status: Schema.String, ...CountRow.fields }))
    )

    return { listOf, byId, byProviderWallet, prepare, move, refreshStatus, countByState } as const
  })
}) {}
