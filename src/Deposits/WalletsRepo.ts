/**
 * The SQL of deposit wallets (the repository of Wallets.ts): the durable request per merchant and
 * network and its moves between the states of spec 3.2, each a conditional update (so two requests
 * never both move one wallet).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { CountRow } from "../Domain/Db.js"
import type { Network } from "../Domain/WalletAddress.js"

export const WalletStatus = Schema.Literal("prepared", "creation_started", "requires_reconciliation", "bound")
export type WalletStatus = typeof WalletStatus.Type

const ProviderStatus = Schema.Literal("active", "disabled")

export const WalletRow = Schema.Struct({
  id: Schema.String,
  merchantId: Schema.String,
  network: Schema.Literal("tron", "bsc"),
  status: WalletStatus,
  providerWalletId: Schema.NullOr(Schema.String),
  address: Schema.NullOr(Schema.String),
  memo: Schema.NullOr(Schema.String),
  providerStatus: Schema.NullOr(ProviderStatus),
  createdAt: Schema.DateFromSelf,
  updatedAt: Schema.DateFromSelf
})
export type WalletRow = typeof WalletRow.Type

/** The provider's idempotency key of a wallet request: derived from it, the same on every try. */
export const idempotencyKeyOf = (walletId: string) => `dw_${walletId}`

/** A move of a request between states, with the columns it sets (those left out keep their value). */
const Move = Schema.Struct({
  id: Schema.String,
  from: Schema.Array(WalletStatus),
  to: WalletStatus,
  providerWalletId: Schema.optional(Schema.NullOr(Schema.String)),
  address: Schema.optional(Schema.NullOr(Schema.String)),
  memo: Schema.optional(Schema.NullOr(Schema.String)),
  providerStatus: Schema.optional(Schema.NullOr(ProviderStatus))
})

export class WalletsRepo extends Effect.Service<WalletsRepo>()("WalletsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`
      id, merchant_id AS "merchantId", network, status, provider_wallet_id AS "providerWalletId", address, memo,
      provider_status AS "providerStatus", created_at AS "createdAt", updated_at AS "updatedAt"`

    /** The merchant's requests, by network. */
    const listOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: WalletRow,
      execute: (merchantId) => sql`SELECT ${columns} FROM deposit_wallets WHERE merchant_id = ${merchantId} ORDER BY network`
    })
    /** The request of an id. */
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: WalletRow,
      execute: (id) => sql`SELECT ${columns} FROM deposit_wallets WHERE id = ${id}`
    })
    /** The request bound to (or creating) a provider's wallet. */
    const byProviderWallet = SqlSchema.findOne({
      Request: Schema.String,
      Result: WalletRow,
      execute: (providerWalletId) => sql`SELECT ${columns} FROM deposit_wallets WHERE provider_wallet_id = ${providerWalletId}`
    })

    const MerchantNetwork = Schema.Struct({ merchantId: Schema.String, network: Schema.String })
    const insertPrepared = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.String, ...MerchantNetwork.fields }),
      execute: ({ id, merchantId, network }) =>
        sql`INSERT INTO deposit_wallets (id, merchant_id, network) VALUES (${id}, ${merchantId}, ${network})
            ON CONFLICT (merchant_id, network) DO NOTHING`
    })
    const byMerchantNetwork = SqlSchema.findOne({
      Request: MerchantNetwork,
      Result: WalletRow,
      execute: ({ merchantId, network }) => sql`SELECT ${columns} FROM deposit_wallets WHERE merchant_id = ${merchantId} AND network = ${network}`
    })

    /** The merchant's request for the network, written as `prepared` if it has none yet (two statements: the write, then the read). */
    const prepare = (merchantId: string, network: Network) =>
      Effect.gen(function*() {
        yield* insertPrepared({ id: randomUUID(), merchantId, network })
        return Option.getOrThrow(yield* byMerchantNetwork({ merchantId, network }))
      })

    const moveRow = SqlSchema.findOne({
      Request: Move,
      Result: WalletRow,
      execute: (m) =>
        sql`
          UPDATE deposit_wallets SET status = ${m.to}, updated_at = now()
            ${m.providerWalletId !== undefined ? sql`, provider_wallet_id = ${m.providerWalletId}` : sql``}
            ${m.address !== undefined ? sql`, address = ${m.address}` : sql``}
            ${m.memo !== undefined ? sql`, memo = ${m.memo}` : sql``}
            ${m.providerStatus !== undefined ? sql`, provider_status = ${m.providerStatus}` : sql``}
          WHERE id = ${m.id} AND status IN ${sql.in(m.from)}
          RETURNING ${columns}`
    })
    /** Moves the request from `from` to `to` (and sets `set`); undefined when it was not in `from` (another request moved it). */
    const move = (id: string, from: ReadonlyArray<WalletStatus>, to: WalletStatus, set: {
      readonly providerWalletId?: string | null
      readonly address?: string | null
      readonly memo?: string | null
      readonly providerStatus?: "active" | "disabled" | null
    } = {}) => moveRow({ id, from, to, ...set }).pipe(Effect.map(Option.getOrUndefined))

    const refreshRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, providerStatus: ProviderStatus }),
      Result: WalletRow,
      execute: ({ id, providerStatus }) =>
        sql`
          UPDATE deposit_wallets SET provider_status = ${providerStatus},
            updated_at = CASE WHEN provider_status = ${providerStatus} THEN updated_at ELSE now() END
          WHERE id = ${id} AND status = 'bound' RETURNING ${columns}`
    })
    /** The provider's status of a bound wallet (its address and memo never change); undefined when not bound. */
    const refreshStatus = (id: string, providerStatus: "active" | "disabled") => refreshRow({ id, providerStatus }).pipe(Effect.map(Option.getOrUndefined))

    const countRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ status: Schema.String, ...CountRow.fields }),
      execute: () => sql`SELECT status, count(*) AS n FROM deposit_wallets GROUP BY status`
    })
    /** Wallet requests by state, for /metrics. */
    const countByState = countRows(undefined)

    return { listOf, byId, byProviderWallet, prepare, move, refreshStatus, countByState } as const
  })
}) {}
