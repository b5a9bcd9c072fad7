/**
 * The cabinet's secrets (CONTRACT 7): passwords as scrypt hashes, computed a bounded number at a
 * time (PasswordHasher), invite tokens and session ids of 256 random bits kept only as SHA-256
 * hashes, and TOTP codes (RFC 6238: SHA-1, 6 digits, 30 s) through `otpauth`. Nothing here logs a
 * secret.
 */
import { Effect, type Option } from "effect"
import { hash, randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import * as OTPAuth from "otpauth"
import { Settings } from "../Config.js"
import { Metrics } from "../Ops/Metrics.js"

// ---- passwords -----------------------------------------------------------------------------------

/**
 * scrypt at N = 2^15, r = 8, p = 3: one of OWASP's equivalent minimum settings (with N = 2^17, p = 1),
 * the one that needs 32 MiB per hash instead of 128 (about 0.2 to 0.4 s on this service's machines).
 */
const SCRYPT_COST = 2 ** 15
const SCRYPT_BLOCK = 8
const SCRYPT_PARALLEL = 3
const KEY_BYTES = 32
const SCRYPT_MAXMEM = 64 * 1024 * 1024

/** One hash's inputs: scrypt's (RFC 7914) with OpenSSL's memory cap. */
interface ScryptJob {
  readonly password: string
  readonly salt: Buffer
  readonly cost: number
  readonly block: number
  readonly parallel: number
  readonly keyBytes: number
  readonly maxmem: number
}

type Derive = (job: ScryptJob) => Effect.Effect<Buffer>

/**
 * One scrypt in one of libuv's threads. Uninterruptible: a hash once started runs to its end
 * whatever becomes of its request, and the fiber (with the thread's permit) waits for it, so a
 * client that hangs up cannot free a permit while its hash still holds memory and a thread.
 */
const scryptOf: Derive = (job) =>
  Effect.uninterruptible(Effect.async<Buffer>((resume) => {
    scrypt(job.password, job.salt, job.keyBytes, { N: job.cost, r: job.block, p: job.parallel, maxmem: job.maxmem }, (error, key) => {
      resume(error === null ? Effect.succeed(key) : Effect.die(error))
    })
  }))

const jobOf = (password: string, salt: Buffer, cost: number, block: number, parallel: number): ScryptJob => ({
  password: password.normalize("NFC"),
  salt,
  cost,
  block,
  parallel,
  keyBytes: KEY_BYTES,
  maxmem: SCRYPT_MAXMEM
})

/** `scrypt$N$r$p$salt$key` (base64url), with the parameters it was made with. */
const hashPassword = (derive: Derive, password: string): Effect.Effect<string> => {
  const salt = randomBytes(16)
  return Effect.map(
    derive(jobOf(password, salt, SCRYPT_COST, SCRYPT_BLOCK, SCRYPT_PARALLEL)),
    (key) => ["scrypt", SCRYPT_COST, SCRYPT_BLOCK, SCRYPT_PARALLEL, salt.toString("base64url"), key.toString("base64url")].join("$")
  )
}

/**
 * Whether `password` matches `stored`. Without a stored hash (no such login) a hash is still
 * computed, so that an unknown login takes as long as a wrong password.
 */
const verifyPassword = (derive: Derive, password: string, stored: string | undefined): Effect.Effect<boolean> => {
  const parts = (stored ?? "").match(/^scrypt\$(\d+)\$(\d+)\$(\d+)\$([\w-]+)\$([\w-]+)$/)
  if (parts === null) return Effect.as(derive(jobOf(password, randomBytes(16), SCRYPT_COST, SCRYPT_BLOCK, SCRYPT_PARALLEL)), false)
  const [, cost = "", block = "", parallel = "", salt = "", key = ""] = parts
  const expected = Buffer.from(key, "base64url")
  return Effect.map(
    derive(jobOf(password, Buffer.from(salt, "base64url"), Number(cost), Number(block), Number(parallel))),
    (actual) => actual.length === expected.length && timingSafeEqual(actual, expected)
  )
}

/**
 * The process's password hashing, bounded (CABINET_PASSWORD_HASH_CONCURRENCY, _QUEUE): each hash
 * holds 32 MiB, a core and one of libuv's threads (four by default, shared with file reads, zlib
 * and DNS) for about 0.3 s, so a flood of sign-ins must not start them without end. At most
 * `concurrency` hashes run at once; a sign-in waits for one only if it found a place (`inPlace`:
 * running or among the `queue` waiting), else it is refused at once.
 */
export class PasswordHasher extends Effect.Service<PasswordHasher>()("PasswordHasher", {
  effect: Effect.gen(function*() {
    const settings = yield* Settings
    const metrics = yield* Metrics
    const computed = metrics.counter({ name: "cabinet_password_hashes_total", help: "Password hashes (scrypt) the cabinet has computed or is computing" })
    const running = yield* Effect.makeSemaphore(settings.cabinetPasswordHashConcurrency)
    const places = yield* Effect.makeSemaphore(settings.cabinetPasswordHashConcurrency + settings.cabinetPasswordHashQueue)
    const derive: Derive = (job) => running.withPermits(1)(Effect.zipRight(Effect.sync(() => computed.inc()), scryptOf(job)))
    return {
      /** A new password's hash (an invite being completed: it waits for its turn, never refused). */
      hash: (password: string) => hashPassword(derive, password),
      verify: (password: string, stored: string | undefined) => verifyPassword(derive, password, stored),
      /** Runs `effect` holding one of the places, or gives None at once when every place is taken. */
      inPlace: <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<Option.Option<A>, E, R> => places.withPermitsIfAvailable(1)(effect)
    } as const
  }),
  dependencies: [Metrics.Default]
}) {}

// ---- tokens --------------------------------------------------------------------------------------

/** An invite token or a session id: 256 random bits. */
export const newToken = (): string => randomBytes(32).toString("base64url")

/** What is stored of a token: its SHA-256 (looked up by index, so timing reveals nothing of the token). */
export const tokenHash = (token: string): string => hash("sha256", token, "hex")

// ---- TOTP ----------------------------------------------------------------------------------------

const PERIOD_SECONDS = 30
const ISSUER = "Merchant Purchasing"

const totpOf = (secret: string, label = "merchant") =>
  new OTPAuth.TOTP({ issuer: ISSUER, label, algorithm: "SHA1", digits: 6, period: PERIOD_SECONDS, secret: OTPAuth.Secret.fromBase32(secret) })

/** A new second factor's secret: 160 random bits in base32 (RFC 4226's recommended length). */
export const newTotpSecret = (): string => new OTPAuth.Secret({ size: 20 }).base32

/** The `otpauth://totp/...` URI an authenticator app reads (the QR code on the onboarding page). */
export const otpauthUri = (secret: string, label: string): string => totpOf(secret, label).toString()

/**
 * The time step of `code` if it is the secret's code for now, the step before or the step after
 * (clock drift between phone and server), else undefined. The caller accepts a step only once.
 */
export const totpStep = (secret: string, code: string, nowMs: number): number | undefined => {
  if (!/^\d{6}$/.test(code)) return undefined
  const delta = totpOf(secret).validate({ token: code, timestamp: nowMs, window: 1 })
  return delta === null ? undefined : Math.floor(nowMs / 1000 / PERIOD_SECONDS) + delta
}
