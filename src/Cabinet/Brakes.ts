/**
 * The cabinet's brakes on guessing. Two lockouts kept in PostgreSQL, so that they hold
 * across processes: a login's sign-ins, and a merchant's step-up codes (the fresh code of the key
 * and secret endpoints). Each attempt takes its place in its window before anything is checked:
 * 5 places within CABINET_LOCKOUT_WINDOW_MINUTES, and the attempts beyond them are refused until
 * the oldest leaves the window. A success gives its own place back; a failure keeps it. Beside
 * them, each client address has a budget of sign-ins that fail (CABINET_SIGNIN_ADDRESS_FAILURES a
 * window, in memory: per process), whatever login they name, known or not.
 */
import { Clock, Data, Duration, Effect } from "effect"
import { Settings } from "../Config.js"
import { makeTokenBuckets } from "../Merchants/RateLimiter.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { CabinetAttemptsRepo } from "./AttemptsRepo.js"

/** Attempts that fill a window: the next one is refused until the oldest of them leaves it. */
export const LOCKOUT_ATTEMPTS = 5

/** What refused an attempt: its login's lockout, its address's budget, the hashing capacity, or the merchant's step-up lockout. */
export type Brake = "login" | "address" | "capacity" | "step-up"

/** An attempt refused by a brake before anything of it was checked: the caller answers 429 with Retry-After. */
export class AttemptLimited extends Data.TaggedError("AttemptLimited")<{
  readonly brake: Brake
  readonly retryAfter: number
  readonly message: string
}> {}

export type AttemptScope = "sign-in" | "step-up"

const refusalMessage = (brake: Brake, seconds: number) => {
  switch (brake) {
    case "login":
      return `Too many failed sign-ins for this login; retry after ${seconds} s.`
    case "address":
      return `Too many failed sign-ins from this address; retry after ${seconds} s.`
    case "capacity":
      return `Too many sign-ins are being checked at once; retry after ${seconds} s.`
    case "step-up":
      return `Too many wrong codes for this merchant's key and secret changes; retry after ${seconds} s.`
  }
}

export class CabinetBrakes extends Effect.Service<CabinetBrakes>()("CabinetBrakes", {
  scoped: Effect.gen(function*() {
    const repo = yield* CabinetAttemptsRepo
    const settings = yield* Settings
    const fibers = yield* Fibers
    const metrics = yield* Metrics
    // settings may be fractional (tests): the window is made of seconds
    const windowSeconds = settings.cabinetLockoutWindowMinutes * 60
    const refusals = metrics.counter({
      name: "cabinet_attempts_refused_total",
      help: "Cabinet sign-ins and step-up codes refused unchecked (429), by brake",
      labelNames: ["brake"]
    })
    const addresses = makeTokenBuckets(settings.cabinetSignInAddressFailures / windowSeconds, settings.cabinetSignInAddressFailures)

    /** The refusal of `brake`, counted. */
    const limited = (brake: Brake, retryAfter: number) => {
      refusals.inc({ brake })
      return new AttemptLimited({ brake, retryAfter, message: refusalMessage(brake, retryAfter) })
    }

    /**
     * Takes a place for one attempt of `subject` (a login in lower case, or a merchant's id): its
     * time, to give back on success, or AttemptLimited when the window is full.
     */
    const takePlace = (scope: AttemptScope, subject: string) =>
      Effect.gen(function*() {
        const taken = yield* repo.addAttempt({ scope, subject, windowSeconds, places: LOCKOUT_ATTEMPTS })
        if (taken._tag === "Some") return taken.value.attempt
        const { seconds } = yield* repo.secondsUntilOpen({ scope, subject, windowSeconds })
        return yield* Effect.fail(limited(scope === "sign-in" ? "login" : "step-up", seconds))
      }).pipe(
        Effect.catchTags({ ParseError: Effect.die, SqlError: Effect.die, NoSuchElementException: Effect.die }),
        Effect.withSpan("CabinetBrakes.takePlace")
      )

    /** Takes back the place of an attempt that succeeded (one time equal to it: two equal times are one and the same). */
    const givePlaceBack = (scope: AttemptScope, subject: string, attempt: string) => repo.removeAttempt({ scope, subject, attempt }).pipe(Effect.orDie)

    /** Forgets a login's sign-ins and its merchant's step-up codes: a completed invite starts afresh. */
    const forget = (login: string, merchantId: string) => repo.forget({ login, merchantId })

    /** Takes one of the address's sign-in places, or fails when it has none left. */
    const takeAddressPlace = (address: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const decision = addresses.takeAt(address, now)
        return decision.allowed ? Effect.void : Effect.fail(limited("address", decision.retryAfterSeconds))
      })

    /** Gives an address's place back: the sign-in succeeded, or was not judged. */
    const giveAddressPlaceBack = (address: string) => Effect.sync(() => addresses.giveBack(address))

    // rows whose newest attempt left the window hold nothing that counts
    yield* fibers.supervise("cabinet-attempts-sweep", (beat) =>
      Effect.forever(Effect.gen(function*() {
        yield* repo.sweep(windowSeconds)
        yield* beat
        yield* Effect.sleep(Duration.seconds(Math.min(60, windowSeconds)))
      })))

    return { takePlace, givePlaceBack, forget, takeAddressPlace, giveAddressPlaceBack, limited } as const
  }),
  dependencies: [CabinetAttemptsRepo.Default, Fibers.Default, Metrics.Default]
}) {}
