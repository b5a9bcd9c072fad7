/**
 * The SQL of merchants (Merchants.ts): the merchant rows, their API keys (kept as SHA-256 hashes)
 * and empty balance at creation, webhook secrets, legacy deposit addresses, and the channel that
 * tells every process of a change of a merchant's keys or status.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { DbNotifications } from "../Db/Notifications.js"
import { Timestamp } from "../Domain/Db.js"
import { Merchant, MerchantId, MerchantStatus } from "../Domain/Merchant.js"

const AUTH_CHANGED_CHANNEL = "merchant_auth_changed"

/** A merchant's row: the domain's Merchant, its times as the driver gives them. */
export const MerchantRow = Schema.Struct({ ...Merchant.fields, createdAt: Timestamp, updatedAt: Timestamp })

const NewMerchant = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  webhookUrl: Schema.NullOr(Schema.String),
  webhookSecret: Schema.String
})

const NewApiKey = Schema.Struct({ id: Schema.String, merchantId: Schema.String, keyHash: Schema.String, last4: Schema.String })

export class MerchantsRepo extends Effect.Service<MerchantsRepo>()("MerchantsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const notifications = yield* DbNotifications
    const merchantColumns = sql`
      id, name, status, webhook_url AS "webhookUrl", legacy_trc20 AS "legacyTrc20", legacy_bep20 AS "legacyBep20",
      created_at AS "createdAt", updated_at AS "updatedAt"`
    /** A statement's rows as "some row came back". */
    const anyRow = Schema.Struct({})

    // ---- reads -----------------------------------------------------------------------------------

    /** The merchant of a live (not revoked) key, by the key's hash. */
    const byKeyHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ id: MerchantId, name: Schema.String, status: MerchantStatus }),
      execute: (hash) =>
        sql`
        SELECT m.id, m.name, m.status FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
        WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`
    })

    /** The merchant of an id. */
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: MerchantRow,
      execute: (id) => sql`SELECT ${merchantColumns} FROM merchants WHERE id = ${id}`
    })

    /** Up to `limit` merchants by name, those matching the ILIKE `pattern` if given, after the name `after`. */
    const byName = SqlSchema.findAll({
      Request: Schema.Struct({ pattern: Schema.optional(Schema.String), after: Schema.optional(Schema.String), limit: Schema.Number }),
      Result: MerchantRow,
      execute: ({ after, limit, pattern }) =>
        sql`SELECT ${merchantColumns} FROM merchants
          WHERE ${pattern === undefined ? sql`TRUE` : sql`name ILIKE ${pattern}`}
            AND ${after === undefined ? sql`TRUE` : sql`name > ${after}`}
          ORDER BY name LIMIT ${limit}`
    })

    const firstMerchant = SqlSchema.findAll({
      Request: Schema.Void,
      Result: anyRow,
      execute: () => sql`SELECT 1 FROM merchants LIMIT 1`
    })
    /** Whether there is no merchant at all. */
    const noneYet = firstMerchant(undefined).pipe(Effect.map((rows) => rows.length === 0))

    /** The merchant's current signing secret. */
    const webhookSecret = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ webhook_secret: Schema.String }),
      execute: (id) => sql`SELECT webhook_secret FROM merchants WHERE id = ${id}`
    })

    // ---- writes ----------------------------------------------------------------------------------

    const insertMerchantRow = SqlSchema.findOne({
      Request: NewMerchant,
      Result: anyRow,
      execute: ({ id, name, webhookSecret, webhookUrl }) =>
        sql`INSERT INTO merchants (id, name, webhook_url, webhook_secret)
            VALUES (${id}, ${name}, ${webhookUrl}, ${webhookSecret})
            ON CONFLICT (name) DO NOTHING RETURNING id`
    })
    /** Saves a new merchant: false when the name is taken. */
    const insertMerchant = (merchant: typeof NewMerchant.Type) => insertMerchantRow(merchant).pipe(Effect.map(Option.isSome))

    /** Saves a key of the merchant (by its hash and last four characters). */
    const insertApiKey = SqlSchema.void({
      Request: NewApiKey,
      execute: ({ id, keyHash, last4, merchantId }) =>
        sql`INSERT INTO api_keys (id, merchant_id, key_hash, last4)
            VALUES (${id}, ${merchantId}, ${keyHash}, ${last4})`
    })

    /** Saves the merchant's empty balance. */
    const insertBalance = SqlSchema.void({
      Request: Schema.String,
      execute: (merchantId) => sql`INSERT INTO balances (merchant_id) VALUES (${merchantId})`
    })

    /** Sets the merchant's status and webhook URL. */
    const updateStatusAndWebhook = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.String, status: MerchantStatus, webhookUrl: Schema.NullOr(Schema.String) }),
      execute: ({ id, status, webhookUrl }) => sql`UPDATE merchants SET status = ${status}, webhook_url = ${webhookUrl}, updated_at = now() WHERE id = ${id}`
    })

    /** Deletes every cabinet session of the merchant. */
    const deleteCabinetSessions = SqlSchema.void({
      Request: Schema.String,
      execute: (id) => sql`DELETE FROM cabinet_sessions WHERE merchant_id = ${id}`
    })

    const lockRow = SqlSchema.findOne({
      Request: Schema.String,
      Result: anyRow,
      execute: (id) => sql`SELECT id FROM merchants WHERE id = ${id} FOR UPDATE`
    })
    /** Locks the merchant's row for the rest of the transaction: false for no such merchant. */
    const lockMerchant = (id: string) => lockRow(id).pipe(Effect.map(Option.isSome))

    /** Revokes the merchant's live keys. */
    const revokeApiKeys = SqlSchema.void({
      Request: Schema.String,
      execute: (id) => sql`UPDATE api_keys SET revoked_at = now() WHERE merchant_id = ${id} AND revoked_at IS NULL`
    })

    const setWebhookSecretRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, secret: Schema.String, previousValidSeconds: Schema.Number }),
      Result: anyRow,
      execute: ({ id, previousValidSeconds, secret }) => {
        const keep = previousValidSeconds > 0
        return sql`
          UPDATE merchants SET webhook_secret = ${secret},
            webhook_secret_previous = ${keep ? sql`webhook_secret` : sql`NULL`},
            webhook_secret_previous_until = ${keep ? sql`now() + make_interval(secs => ${previousValidSeconds})` : sql`NULL`},
            updated_at = now()
          WHERE id = ${id} RETURNING id`
      }
    })
    /**
     * Sets a new signing secret, keeping the one it replaces for `previousValidSeconds` when above
     * 0 (only the immediate predecessor; 0 drops it): false for no such merchant.
     */
    const setWebhookSecret = (input: { readonly id: string; readonly secret: string; readonly previousValidSeconds: number }) =>
      setWebhookSecretRow(input).pipe(Effect.map(Option.isSome))

    /** Sets the merchant's legacy deposit addresses. */
    const setLegacyAddresses = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.String, trc20: Schema.NullOr(Schema.String), bep20: Schema.NullOr(Schema.String) }),
      execute: ({ bep20, id, trc20 }) =>
        sql`UPDATE merchants SET legacy_trc20 = ${trc20}, legacy_bep20 = ${bep20},
            updated_at = now() WHERE id = ${id}`
    })

    // ---- change notifications --------------------------------------------------------------------

    /** Notifies every process listening of a change (at commit; sql-pg's own notify sends invalid SQL). */
    const notifyAuthChange = SqlSchema.void({
      Request: Schema.String,
      execute: (payload) => sql`SELECT pg_notify(${AUTH_CHANGED_CHANNEL}, ${payload})`
    })

    /** The payloads of the notifications, this process's too, as they arrive (LISTEN on its own connection). */
    const authChanges = notifications.listen(AUTH_CHANGED_CHANNEL)

    return {
      withTransaction: sql.withTransaction,
      byKeyHash,
      byId,
      byName,
      noneYet,
      webhookSecret,
      insertMerchant,
      insertApiKey,
      insertBalance,
      updateStatusAndWebhook,
      deleteCabinetSessions,
      lockMerchant,
      revokeApiKeys,
      setWebhookSecret,
      setLegacyAddresses,
      notifyAuthChange,
      authChanges
    } as const
  })
}) {}
