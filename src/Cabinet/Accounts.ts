/**
 * Merchants' cabinet accounts (CONTRACT 7): invites, the login with its password and second
 * factor, sign-in and the step-up code behind the brakes (Brakes.ts), and sessions. A TOTP code is
 * accepted once per merchant whichever call uses it (the last accepted time step is kept with the
 * login, and moved forward by one conditional UPDATE, so two requests racing with one code cannot
 * both pass).
 */
import { Clock, Effect, Option, Schema } from "effect"
import { Settings } from "../Config.js"
import { unstorablePath } from "../Domain/Db.js"
import {
  CabinetCodeInvalid,
  CabinetInviteInvalid,
  CabinetLoginFailed,
  CabinetLoginTaken,
  CabinetWeakPassword,
  InvalidQuery,
  MerchantBlocked
} from "../Domain/Errors.js"
import type { AuthenticatedMerchant } from "../Domain/Merchant.js"
import { CabinetAccountsRepo } from "./AccountsRepo.js"
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

export type { Profile } from "./AccountsRepo.js"

export class CabinetAccounts extends Effect.Service<CabinetAccounts>()("CabinetAccounts", {
  effect: Effect.gen(function*() {
    const repo = yield* CabinetAccountsRepo
    const settings = yield* Settings
    const brakes = yield* CabinetBrakes
    const hasher = yield* PasswordHasher
    // settings may be fractional (tests): intervals are made of seconds
    const idleSeconds = settings.sessionIdleMinutes * 60
    const lifetimeSeconds = settings.sessionMaxHours * 3600

    // ---- invites ---------------------------------------------------------------------------------

    /** A new invite for the merchant (its earlier unused ones are voided); None for no such merchant. */
    const invite = (merchantId: string) =>
      repo.withTransaction(Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(merchantId)) return Option.none<{ readonly inviteUrl: string; readonly expiresAt: Date }>()
        if (Option.isNone(yield* repo.lockMerchant(merchantId))) return Option.none()
        yield* repo.voidInvites(merchantId)
        const token = newToken()
        const { expiresAt } = yield* repo.insertInvite({ tokenHash: tokenHash(token), merchantId, validHours: INVITE_HOURS })
        return Option.some({ inviteUrl: `${settings.publicUrl}/cabinet/invite#${token}`, expiresAt })
      })).pipe(Effect.orDie, Effect.withSpan("CabinetAccounts.invite"))

    const inviteInvalid = new CabinetInviteInvalid({ message: INVITE_INVALID_MESSAGE })

    /** The invite's merchant and second factor (chosen at the first start, the same on every start). */
    const startInvite = (token: string) =>
      repo.withTransaction(Effect.gen(function*() {
        const hash = tokenHash(token)
        const found = yield* repo.liveInvite(hash).pipe(Effect.orDie)
        if (Option.isNone(found)) return yield* Effect.fail(inviteInvalid)
        let secret = found.value.totpSecret
        if (secret === null) {
          secret = newTotpSecret()
          yield* repo.setInviteSecret({ tokenHash: hash, totpSecret: secret })
        }
        return { merchantName: found.value.name, totpSecret: secret, otpauthUri: otpauthUri(secret, found.value.name) }
      })).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }), Effect.withSpan("CabinetAccounts.startInvite"))

    /**
     * Completes an invite: the login, password and second factor replace any earlier ones, every
     * session of the merchant ends, and a new session starts (its id is returned). The API key is
     * not changed.
     */
    const completeInvite = (input: { readonly token: string; readonly login: string; readonly password: string; readonly code: string }) =>
      Effect.gen(function*() {
        const hash = tokenHash(input.token)
        const peek = yield* repo.liveInvite(hash).pipe(Effect.orDie)
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
        return yield* repo.withTransaction(Effect.gen(function*() {
          const invite = yield* repo.liveInvite(hash).pipe(Effect.orDie)
          if (Option.isNone(invite) || invite.value.totpSecret !== secret) return yield* Effect.fail(inviteInvalid)
          const merchantId = invite.value.merchantId
          if (yield* repo.loginTaken({ login, merchantId })) {
            return yield* Effect.fail(new CabinetLoginTaken({ message: "login: already used by another merchant" }))
          }
          yield* repo.saveLogin({ merchantId, login, passwordHash, totpSecret: secret, totpLastStep: step })
          yield* repo.useInvite(hash)
          yield* repo.deleteSessionsOf(merchantId)
          yield* brakes.forget(login.toLowerCase(), merchantId)
          const session = yield* startSession(merchantId)
          return { merchantId, login, session }
        }))
      }).pipe(
        Effect.catchTags({
          // two invites completing at once with one login: the unique index decides
          SqlError: (error) =>
            String(error.cause).includes("cabinet_logins_login")
              ? Effect.fail(new CabinetLoginTaken({ message: "login: already used by another merchant" }))
              : Effect.die(error),
          ParseError: Effect.die
        }),
        Effect.withSpan("CabinetAccounts.completeInvite")
      )

    // ---- sign-in ---------------------------------------------------------------------------------

    const loginFailed = new CabinetLoginFailed({ message: LOGIN_FAILED_MESSAGE })

    /**
     * Judges one sign-in in a hashing place, its place in the login's window taken first: a new
     * session's id, or a refusal. Every wrong part is the same 401, and an unknown login costs the
     * same password hash as a known one. A failure keeps its place in the window.
     */
    const judgeSignIn = (login: string, input: { readonly password: string; readonly code: string }) =>
      Effect.gen(function*() {
        const attempt = yield* brakes.takePlace("sign-in", login)
        const found = Option.getOrUndefined(yield* repo.findLogin(login).pipe(Effect.orDie))
        const passwordMatches = yield* hasher.verify(input.password, found?.passwordHash)
        const step = found === undefined ? undefined : totpStep(found.totpSecret, input.code, yield* Clock.currentTimeMillis)
        if (found === undefined || !passwordMatches || step === undefined) return yield* Effect.fail(loginFailed)
        // refused for another reason: the code is not used up, and the attempt was no guess
        if (found.status === "blocked") {
          yield* brakes.givePlaceBack("sign-in", login, attempt)
          return yield* Effect.fail(new MerchantBlocked({ message: "This merchant account is blocked." }))
        }
        if (!(yield* repo.useCode({ merchantId: found.merchantId, step }))) return yield* Effect.fail(loginFailed)
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
        Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }),
        Effect.withSpan("CabinetAccounts.signIn")
      )

    /**
     * Uses a fresh code of the merchant's second factor (key and secret changes), or fails as
     * CABINET_CODE_INVALID; its place in the merchant's step-up window is taken first
     * (AttemptLimited when full), and given back when the code was right.
     */
    const requireFreshCode = (merchantId: string, code: string): Effect.Effect<void, CabinetCodeInvalid | AttemptLimited> =>
      Effect.gen(function*() {
        const attempt = yield* brakes.takePlace("step-up", merchantId)
        const secret = yield* repo.findTotpSecret(merchantId).pipe(Effect.orDie)
        const step = Option.isNone(secret) ? undefined : totpStep(secret.value.totpSecret, code, yield* Clock.currentTimeMillis)
        if (step === undefined || !(yield* repo.useCode({ merchantId, step }))) {
          return yield* Effect.fail(new CabinetCodeInvalid({ message: "code: not a fresh code of your authenticator app (each code works once)" }))
        }
        yield* brakes.givePlaceBack("step-up", merchantId, attempt)
      }).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }), Effect.withSpan("CabinetAccounts.requireFreshCode"))

    // ---- sessions --------------------------------------------------------------------------------

    const startSession = (merchantId: string) =>
      Effect.gen(function*() {
        const id = newToken()
        // sessions that ended by time are dropped as new ones start
        yield* repo.deleteEndedSessions(idleSeconds)
        yield* repo.insertSession({ idHash: tokenHash(id), merchantId, lifetimeSeconds })
        return id
      })

    /** The merchant of a live session (its idle clock restarts), or None: unknown, idle too long, past its lifetime, or blocked. */
    const session = (id: string): Effect.Effect<Option.Option<AuthenticatedMerchant>> =>
      id === "" ? Effect.succeedNone : repo.touchSession({ idHash: tokenHash(id), idleSeconds }).pipe(Effect.orDie)

    const endSession = (id: string) => repo.deleteSession(tokenHash(id)).pipe(Effect.orDie)

    const profile = (merchantId: string) =>
      repo.findProfile(merchantId).pipe(Effect.flatMap(Effect.orElseFail(() => new Error("merchant vanished"))), Effect.orDie)

    return { invite, startInvite, completeInvite, signIn, requireFreshCode, session, endSession, profile } as const
  }),
  dependencies: [CabinetAccountsRepo.Default, CabinetBrakes.Default, PasswordHasher.Default]
}) {}
