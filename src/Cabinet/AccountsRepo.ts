/**
 * The SQL of cabinet accounts (Accounts.ts): invites, logins with their second factor, sessions,
 * and the profile the cabinet shows. Secrets arrive hashed; the rules are the service's.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Timestamp } from "../Domain/Db.js"
import { MerchantId, MerchantStatus } from "../Domain/Merchant.js"

const LoginRow = Schema.Struct({
  merchantId: MerchantId,
  name: Schema.String,
  status: MerchantStatus,
  passwordHash: Schema.String,
  totpSecret: Schema.String
})

const InviteRow = Schema.Struct({ merchantId: MerchantId, name: Schema.String, totpSecret: Schema.NullOr(Schema.String) })

const SessionRow = Schema.Struct({ id: MerchantId, name: Schema.String, status: MerchantStatus })

const ProfileRow = Schema.Struct({
  id: MerchantId,
  name: Schema.String,
  status: MerchantStatus,
  webhookUrl: Schema.NullOr(Schema.String),
  login: Schema.NullOr(Schema.String),
  keyLast4: Schema.NullOr(Schema.String),
  keyCreatedAt: Schema.NullOr(Timestamp)
})
export type Profile = typeof ProfileRow.Type

export class CabinetAccountsRepo extends Effect.Service<CabinetAccountsRepo>()("CabinetAccountsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // ---- invites ---------------------------------------------------------------------------------

    /** Locks the merchant's row (invites of one merchant are made one at a time): None for no such merchant. */
    const lockMerchant = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (merchantId) => sql`SELECT id FROM merchants WHERE id = ${merchantId} FOR UPDATE`
    })

    /** Voids the merchant's invites not used yet. */
    const voidInvites = SqlSchema.void({
      Request: Schema.String,
      execute: (merchantId) =>
        sql`UPDATE cabinet_invites SET voided_at = now()
            WHERE merchant_id = ${merchantId} AND used_at IS NULL AND voided_at IS NULL`
    })

    /** Saves an invite valid for `validHours` from now: its expiry. */
    const insertInvite = SqlSchema.single({
      Request: Schema.Struct({ tokenHash: Schema.String, merchantId: Schema.String, validHours: Schema.Number }),
      Result: Schema.Struct({ expiresAt: Timestamp }),
      execute: ({ merchantId, tokenHash, validHours }) =>
        sql`INSERT INTO cabinet_invites (token_hash, merchant_id, expires_at)
            VALUES (${tokenHash}, ${merchantId}, now() + make_interval(hours => ${validHours}))
            RETURNING expires_at AS "expiresAt"`
    })

    /** The invite of a token hash if unused, not voided and not expired, locked for the rest of the transaction. */
    const liveInvite = SqlSchema.findOne({
      Request: Schema.String,
      Result: InviteRow,
      execute: (hash) =>
        sql`SELECT i.merchant_id AS "merchantId", m.name, i.totp_secret AS "totpSecret"
            FROM cabinet_invites i JOIN merchants m ON m.id = i.merchant_id
            WHERE i.token_hash = ${hash} AND i.used_at IS NULL AND i.voided_at IS NULL AND i.expires_at > now()
            FOR UPDATE OF i`
    })

    /** Sets the second factor's secret chosen for an invite. */
    const setInviteSecret = SqlSchema.void({
      Request: Schema.Struct({ tokenHash: Schema.String, totpSecret: Schema.String }),
      execute: ({ tokenHash, totpSecret }) => sql`UPDATE cabinet_invites SET totp_secret = ${totpSecret} WHERE token_hash = ${tokenHash}`
    })

    /** Marks an invite used. */
    const useInvite = SqlSchema.void({
      Request: Schema.String,
      execute: (hash) => sql`UPDATE cabinet_invites SET used_at = now() WHERE token_hash = ${hash}`
    })

    // ---- logins ----------------------------------------------------------------------------------

    const findLoginOfOther = SqlSchema.findOne({
      Request: Schema.Struct({ login: Schema.String, merchantId: Schema.String }),
      Result: Schema.Struct({}),
      execute: ({ login, merchantId }) => sql`SELECT 1 FROM cabinet_logins WHERE lower(login) = lower(${login}) AND merchant_id <> ${merchantId}`
    })
    /** Whether another merchant has the login (in any case). */
    const loginTaken = (input: { readonly login: string; readonly merchantId: string }) => findLoginOfOther(input).pipe(Effect.map(Option.isSome))

    /** Saves the merchant's login, password hash and second factor, replacing any earlier ones. */
    const saveLogin = SqlSchema.void({
      Request: Schema.Struct({
        merchantId: Schema.String,
        login: Schema.String,
        passwordHash: Schema.String,
        totpSecret: Schema.String,
        totpLastStep: Schema.Number
      }),
      execute: ({ login, merchantId, passwordHash, totpLastStep, totpSecret }) =>
        sql`
          INSERT INTO cabinet_logins (merchant_id, login, password_hash, totp_secret, totp_last_step)
          VALUES (${merchantId}, ${login}, ${passwordHash}, ${totpSecret}, ${totpLastStep})
          ON CONFLICT (merchant_id) DO UPDATE SET login = excluded.login, password_hash = excluded.password_hash,
            totp_secret = excluded.totp_secret, totp_last_step = excluded.totp_last_step, updated_at = now()`
    })

    /** The login (in any case) with its merchant, password hash and second factor. */
    const findLogin = SqlSchema.findOne({
      Request: Schema.String,
      Result: LoginRow,
      execute: (login) =>
        sql`SELECT l.merchant_id AS "merchantId", m.name, m.status, l.password_hash AS "passwordHash", l.totp_secret AS "totpSecret"
            FROM cabinet_logins l JOIN merchants m ON m.id = l.merchant_id WHERE lower(l.login) = lower(${login})`
    })

    const moveLastStep = SqlSchema.findOne({
      Request: Schema.Struct({ merchantId: Schema.String, step: Schema.Number }),
      Result: Schema.Struct({}),
      execute: ({ merchantId, step }) =>
        sql`UPDATE cabinet_logins SET totp_last_step = ${step}
            WHERE merchant_id = ${merchantId} AND (totp_last_step IS NULL OR totp_last_step < ${step}) RETURNING merchant_id`
    })
    /**
     * Moves the merchant's last accepted step to `step` if it is later: false when the code (or a
     * later one) was used already. One conditional UPDATE, so two requests racing with one code
     * cannot both pass.
     */
    const useCode = (input: { readonly merchantId: string; readonly step: number }) => moveLastStep(input).pipe(Effect.map(Option.isSome))

    /** The merchant's second factor's secret. */
    const findTotpSecret = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ totpSecret: Schema.String }),
      execute: (merchantId) => sql`SELECT totp_secret AS "totpSecret" FROM cabinet_logins WHERE merchant_id = ${merchantId}`
    })

    // ---- sessions --------------------------------------------------------------------------------

    /** Deletes the sessions past their lifetime or idle longer than `idleSeconds`. */
    const deleteEndedSessions = SqlSchema.void({
      Request: Schema.Number,
      execute: (idleSeconds) =>
        sql`DELETE FROM cabinet_sessions
            WHERE expires_at < now() OR last_seen_at < now() - make_interval(secs => ${idleSeconds})`
    })

    /** Saves a session of the merchant living at most `lifetimeSeconds`. */
    const insertSession = SqlSchema.void({
      Request: Schema.Struct({ idHash: Schema.String, merchantId: Schema.String, lifetimeSeconds: Schema.Number }),
      execute: ({ idHash, lifetimeSeconds, merchantId }) =>
        sql`INSERT INTO cabinet_sessions (id_hash, merchant_id, expires_at)
            VALUES (${idHash}, ${merchantId}, now() + make_interval(secs => ${lifetimeSeconds}))`
    })

    /** Restarts a live session's idle clock: its merchant, or None (unknown, idle, past its lifetime, or blocked). */
    const touchSession = SqlSchema.findOne({
      Request: Schema.Struct({ idHash: Schema.String, idleSeconds: Schema.Number }),
      Result: SessionRow,
      execute: ({ idHash, idleSeconds }) =>
        sql`UPDATE cabinet_sessions s SET last_seen_at = now() FROM merchants m
            WHERE s.id_hash = ${idHash} AND m.id = s.merchant_id AND m.status <> 'blocked'
              AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => ${idleSeconds})
            RETURNING m.id, m.name, m.status`
    })

    /** Deletes one session. */
    const deleteSession = SqlSchema.void({
      Request: Schema.String,
      execute: (idHash) => sql`DELETE FROM cabinet_sessions WHERE id_hash = ${idHash}`
    })

    /** Deletes every session of the merchant. */
    const deleteSessionsOf = SqlSchema.void({
      Request: Schema.String,
      execute: (merchantId) => sql`DELETE FROM cabinet_sessions WHERE merchant_id = ${merchantId}`
    })

    /** The merchant with its login and its live key's last four characters. */
    const findProfile = SqlSchema.findOne({
      Request: Schema.String,
      Result: ProfileRow,
      execute: (merchantId) =>
        sql`SELECT m.id, m.name, m.status, m.webhook_url AS "webhookUrl", l.login, k.last4 AS "keyLast4", k.created_at AS "keyCreatedAt"
            FROM merchants m
            LEFT JOIN cabinet_logins l ON l.merchant_id = m.id
            LEFT JOIN api_keys k ON k.merchant_id = m.id AND k.revoked_at IS NULL
            WHERE m.id = ${merchantId}`
    })

    return {
      withTransaction: sql.withTransaction,
      lockMerchant,
      voidInvites,
      insertInvite,
      liveInvite,
      setInviteSecret,
      useInvite,
      loginTaken,
      saveLogin,
      findLogin,
      useCode,
      findTotpSecret,
      deleteEndedSessions,
      insertSession,
      touchSession,
      deleteSession,
      deleteSessionsOf,
      findProfile
    } as const
  })
}) {}
