/**
 * Merchants' cabinet accounts (CONTRACT 7): invites, the login with its password and second
 * factor, sign-in and the step-up code behind the brakes (Brakes.ts), and sessions. A TOTP code is
 * accepted once per merchant whichever call uses it (the last accepted time step is kept with the
 * login, and moved forward by one conditional UPDATE, so two requests racing with one code cannot
 * both pass).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Effect, Option, Schema } from "effect"
import { Settings } from "../Config.js"
import { Timestamp, unstorablePath } from "../Domain/Db.js"
import {
  CabinetCodeInvalid,
  CabinetInviteInvalid,
  CabinetLoginFailed,
  CabinetLoginTaken,
  CabinetWeakPassword,
  InvalidQuery,
  MerchantBlocked
} from "../Domain/Errors.js"
import { type AuthenticatedMerchant, MerchantId, MerchantStatus } from "../Domain/Merchant.js"
import { AttemptLimited, CabinetBrakes } from "./Brakes.js"
import { newToken, newTotpSecret, otpauthUri, PasswordHasher, tokenHash, totpStep } from "./Secrets.js"

const INVITE_HOURS = 72
/** Seconds a sign-in refused for the hashing capacity is told to wait: places free within about a hash's time. */
const CAPACITY_RETRY_SECONDS = 1
const PASSWORD_MIN = 12
const PASSWORD_MAX = 256
const LOGIN_MAX = 254

/** One message for every refused sign-in, so the bodies are byte-identical whatever was wrong. */
export const LOGIN_FAILED_MESSAGE = "The login, password or code is not right."
const INVITE_INVALID_MESSAGE = "This invite link is unknown, used or expired: ask your operator for a new one."

/** An email address as far as a login needs one: one `@`, no spaces, a dot in the domain. */
const isEmail = (login: string) => login.length <= LOGIN_MAX && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(login)

const LoginRow = Schema.Struct({
  merchantId: MerchantId,
  name: Schema.String,
  status: MerchantStatus,
  passwordHash: Schema.String,
  totpSecret: Schema.String
})

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

export class CabinetAccounts extends Effect.Service<CabinetAccounts>()("CabinetAccounts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* Settings
    const brakes = yield* CabinetBrakes
    const hasher = yield* PasswordHasher
    // settings may be fractional (tests): intervals are made of seconds
    const idleMinutes = settings.sessionIdleMinutes
    const maxHours = settings.sessionMaxHours

    // ---- invites ---------------------------------------------------------------------------------

    const insertInvite = SqlSchema.single({
      Request: Schema.Struct({ tokenHash: Schema.String, merchantId: Schema.String }),
      Result: Schema.Struct({ expiresAt: Timestamp }),
      execute: ({ merchantId, tokenHash }) =>
        sql`INSERT INTO cabinet_invites (token_hash, merchant_id, expires_at)
            VALUES (${tokenHash}, ${merchantId}, now() + make_interval(hours => ${INVITE_HOURS}))
            RETURNING expires_at AS "expiresAt"`
    })

    /** A new invite for the merchant (its earlier unused ones are voided); None for no such merchant. */
    const invite = (merchantId: string) =>
      sql.withTransaction(Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(merchantId)) return Option.none<{ readonly inviteUrl: string; readonly expiresAt: Date }>()
        const merchants = yield* sql`SELECT id FROM merchants WHERE id = ${merchantId} FOR UPDATE`
        if (merchants.length === 0) return Option.none()
        yield* sql`UPDATE cabinet_invites SET voided_at = now()
                   WHERE merchant_id = ${merchantId} AND used_at IS NULL AND voided_at IS NULL`
        const token = newToken()
        const { expiresAt } = yield* insertInvite({ tokenHash: tokenHash(token), merchantId })
        return Option.some({ inviteUrl: `${settings.publicUrl}/cabinet/invite#${token}`, expiresAt })
      })).pipe(Effect.orDie, Effect.withSpan("CabinetAccounts.invite"))

    const liveInvite = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ merchantId: MerchantId, name: Schema.String, totpSecret: Schema.NullOr(Schema.String) }),
      execute: (hash) =>
        sql`SELECT i.merchant_id AS "merchantId", m.name, i.totp_secret AS "totpSecret"
            FROM cabinet_invites i JOIN merchants m ON m.id = i.merchant_id
            WHERE i.token_hash = ${hash} AND i.used_at IS NULL AND i.voided_at IS NULL AND i.expires_at > now()
            FOR UPDATE OF i`
    })

    const inviteInvalid = new CabinetInviteInvalid({ message: INVITE_INVALID_MESSAGE })

    /** The invite's merchant and second factor (chosen at the first start, the same on every start). */
    const startInvite = (token: string) =>
      sql.withTransaction(Effect.gen(function*() {
        const hash = tokenHash(token)
        const found = yield* liveInvite(hash).pipe(Effect.orDie)
        if (Option.isNone(found)) return yield* Effect.fail(inviteInvalid)
        let secret = found.value.totpSecret
        if (secret === null) {
          secret = newTotpSecret()
          yield* sql`UPDATE cabinet_invites SET totp_secret = ${secret} WHERE token_hash = ${hash}`
        }
        return { merchantName: found.value.name, totpSecret: secret, otpauthUri: otpauthUri(secret, found.value.name) }
      })).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("CabinetAccounts.startInvite"))

    /**
     * Completes an invite: the login, password and second factor replace any earlier ones, every
     * session of the merchant ends, and a new session starts (its id is returned). The API key is
     * not changed.
     */
    const completeInvite = (input: { readonly token: string; readonly login: string; readonly password: string; readonly code: string }) =>
      Effect.gen(function*() {
        const hash = tokenHash(input.token)
        const peek = yield* liveInvite(hash).pipe(Effect.orDie)
        if (Option.isNone(peek)) return yield* Effect.fail(inviteInvalid)
        const login = input.login.trim()
        if (!isEmail(login)) return yield* Effect.fail(new InvalidQuery({ message: "login: must be an email address" }))
        if (input.password.length < PASSWORD_MIN || input.password.length > PASSWORD_MAX) {
          return yield* Effect.fail(new CabinetWeakPassword({ message: `password: must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters long` }))
        }
        const secret = peek.value.totpSecret
        const step = secret === null ? undefined : totpStep(secret, input.code, yield* Clock.currentTimeMillis)
        if (secret === null || step === undefined) {
          return yield* Effect.fail(new CabinetCodeInvalid({ message: "code: not the current code of the authenticator app set up from this invite" }))
        }
        // hashed before the transaction: its 0.2 s or more must not hold row locks
        const passwordHash = yield* hasher.hash(input.password)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const invite = yield* liveInvite(hash).pipe(Effect.orDie)
          if (Option.isNone(invite) || invite.value.totpSecret !== secret) return yield* Effect.fail(inviteInvalid)
          const merchantId = invite.value.merchantId
          const taken = yield* sql`SELECT 1 FROM cabinet_logins WHERE lower(login) = lower(${login}) AND merchant_id <> ${merchantId}`
          if (taken.length > 0) return yield* Effect.fail(new CabinetLoginTaken({ message: "login: already used by another merchant" }))
          yield* sql`
            INSERT INTO cabinet_logins (merchant_id, login, password_hash, totp_secret, totp_last_step)
            VALUES (${merchantId}, ${login}, ${passwordHash}, ${secret}, ${step})
            ON CONFLICT (merchant_id) DO UPDATE SET login = excluded.login, password_hash = excluded.password_hash,
              totp_secret = excluded.totp_secret, totp_last_step = excluded.totp_last_step, updated_at = now()`
          yield* sql`UPDATE cabinet_invites SET used_at = now() WHERE token_hash = ${hash}`
          yield* sql`DELETE FROM cabinet_sessions WHERE merchant_id = ${merchantId}`
          yield* brakes.forget(login.toLowerCase(), merchantId)
          const session = yield* startSession(merchantId)
          return { merchantId, login, session }
        }))
      }).pipe(
        // two invites completing at once with one login: the unique index decides
        Effect.catchTag("SqlError", (error) =>
          String(error.cause).includes("cabinet_logins_login")
            ? Effect.fail(new CabinetLoginTaken({ message: "login: already used by another merchant" }))
            : Effect.die(error)),
        Effect.withSpan("CabinetAccounts.completeInvite")
      )

    // ---- sign-in ---------------------------------------------------------------------------------

    const findLogin = SqlSchema.findOne({
      Request: Schema.String,
      Result: LoginRow,
      execute: (login) =>
        sql`SELECT l.merchant_id AS "merchantId", m.name, m.status, l.password_hash AS "passwordHash", l.totp_secret AS "totpSecret"
            FROM cabinet_logins l JOIN merchants m ON m.id = l.merchant_id WHERE lower(l.login) = lower(${login})`
    })

    const loginFailed = new CabinetLoginFailed({ message: LOGIN_FAILED_MESSAGE })

    /**
     * Moves the merchant's last accepted step to `step` if it is later: false when the code (or a
     * later one) was used already.
     */
    const useCode = (merchantId: string, step: number) =>
      sql`UPDATE cabinet_logins SET totp_last_step = ${step}
          WHERE merchant_id = ${merchantId} AND (totp_last_step IS NULL OR totp_last_step < ${step}) RETURNING merchant_id`.pipe(
        Effect.map((rows) => rows.length > 0)
      )

    /**
     * Judges one sign-in in a hashing place, its place in the login's window taken first: a new
     * session's id, or a refusal. Every wrong part is the same 401, and an unknown login costs the
     * same password hash as a known one. A failure keeps its place in the window.
     */
    const judgeSignIn = (login: string, input: { readonly password: string; readonly code: string }) =>
      Effect.gen(function*() {
        const attempt = yield* brakes.takePlace("sign-in", login)
        const found = Option.getOrUndefined(yield* findLogin(login).pipe(Effect.orDie))
        const passwordMatches = yield* hasher.verify(input.password, found?.passwordHash)
        const step = found === undefined ? undefined : totpStep(found.totpSecret, input.code, yield* Clock.currentTimeMillis)
        if (found === undefined || !passwordMatches || step === undefined) return yield* Effect.fail(loginFailed)
        // refused for another reason: the code is not used up, and the attempt was no guess
        if (found.status === "blocked") {
          yield* brakes.givePlaceBack("sign-in", login, attempt)
          return yield* Effect.fail(new MerchantBlocked({ message: "This merchant account is blocked." }))
        }
        if (!(yield* useCode(found.merchantId, step))) return yield* Effect.fail(loginFailed)
        yield* brakes.givePlaceBack("sign-in", login, attempt)
        return yield* startSession(found.merchantId)
      })

    /**
     * Signs in from `address`: a new session's id, or a refusal. The address's budget is spent
     * first, then a hashing place (none free: 429 at once, nothing checked), then the login's
     * window. A success, a refusal before any check and a blocked merchant give the address's place
     * back; a wrong sign-in and an attempt on a locked login keep it.
     */
    const signIn = (input: { readonly login: string; readonly password: string; readonly code: string }, address: string) =>
      Effect.gen(function*() {
        yield* brakes.takeAddressPlace(address)
        const login = input.login.trim().toLowerCase()
        // text the database cannot hold is no login: refused like an unknown one, no hash needed
        if (unstorablePath(login) !== undefined) return yield* Effect.fail(loginFailed)
        const judged = yield* hasher.inPlace(judgeSignIn(login, input))
        if (Option.isNone(judged)) return yield* Effect.fail(brakes.limited("capacity", CAPACITY_RETRY_SECONDS))
        return judged.value
      }).pipe(
        Effect.tapBoth({
          onSuccess: () => brakes.giveAddressPlaceBack(address),
          onFailure: (error) =>
            error._tag === "CabinetLoginFailed" || (error._tag === "AttemptLimited" && error.brake !== "capacity")
              ? Effect.void
              : brakes.giveAddressPlaceBack(address)
        }),
        Effect.catchTag("SqlError", Effect.die),
        Effect.withSpan("CabinetAccounts.signIn")
      )

    const findTotpSecret = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ totpSecret: Schema.String }),
      execute: (merchantId) => sql`SELECT totp_secret AS "totpSecret" FROM cabinet_logins WHERE merchant_id = ${merchantId}`
    })

    /**
     * Uses a fresh code of the merchant's second factor (key and secret changes), or fails as
     * CABINET_CODE_INVALID; its place in the merchant's step-up window is taken first
     * (AttemptLimited when full), and given back when the code was right.
     */
    const requireFreshCode = (merchantId: string, code: string): Effect.Effect<void, CabinetCodeInvalid | AttemptLimited> =>
      Effect.gen(function*() {
        const attempt = yield* brakes.takePlace("step-up", merchantId)
        const secret = yield* findTotpSecret(merchantId).pipe(Effect.orDie)
        const step = Option.isNone(secret) ? undefined : totpStep(secret.value.totpSecret, code, yield* Clock.currentTimeMillis)
        if (step === undefined || !(yield* useCode(merchantId, step))) {
          return yield* Effect.fail(new CabinetCodeInvalid({ message: "code: not a fresh code of your authenticator app (each code works once)" }))
        }
        yield* brakes.givePlaceBack("step-up", merchantId, attempt)
      }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("CabinetAccounts.requireFreshCode"))

    // ---- sessions --------------------------------------------------------------------------------

    const startSession = (merchantId: string) =>
      Effect.gen(function*() {
        const id = newToken()
        // sessions that ended by time are dropped as new ones start
        yield* sql`DELETE FROM cabinet_sessions
                   WHERE expires_at < now() OR last_seen_at < now() - make_interval(secs => ${idleMinutes * 60})`
        yield* sql`INSERT INTO cabinet_sessions (id_hash, merchant_id, expires_at)
                   VALUES (${tokenHash(id)}, ${merchantId}, now() + make_interval(secs => ${maxHours * 3600}))`
        return id
      })

    const touchSession = SqlSchema.findOne({
      Request: Schema.String,
      Result: SessionRow,
      execute: (hash) =>
        sql`UPDATE cabinet_sessions s SET last_seen_at = now() FROM merchants m
            WHERE s.id_hash = ${hash} AND m.id = s.merchant_id AND m.status <> 'blocked'
              AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => ${idleMinutes * 60})
            RETURNING m.id, m.name, m.status`
    })

    /** The merchant of a live session (its idle clock restarts), or None: unknown, idle too long, past its lifetime, or blocked. */
    const session = (id: string): Effect.Effect<Option.Option<AuthenticatedMerchant>> =>
      id === "" ? Effect.succeedNone : touchSession(tokenHash(id)).pipe(Effect.orDie)

    const endSession = (id: string) => sql`DELETE FROM cabinet_sessions WHERE id_hash = ${tokenHash(id)}`.pipe(Effect.asVoid, Effect.orDie)

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

    const profile = (merchantId: string) => findProfile(merchantId).pipe(Effect.flatMap(Effect.orElseFail(() => new Error("merchant vanished"))), Effect.orDie)

    return { invite, startInvite, completeInvite, signIn, requireFreshCode, session, endSession, profile } as const
  }),
  dependencies: [CabinetBrakes.Default, PasswordHasher.Default]
}) {}
