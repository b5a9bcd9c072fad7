/**
 * Logging purchases' reservations. A buy queues its item's removal (its statement's reservation piece, Purchases/BuyStatements.ts)
 * instead of appending it to the change log in its own transaction, and announces it once
 * committed; this process's `catalogue-reservations` fiber then logs what is queued, in batches.
 * The fiber also looks every POLL_INTERVAL for reservations a process that died before logging
 * them left queued; SKIP LOCKED lets every process do so without logging anything twice.
 */
import { Effect, Queue } from "effect"
import { Fibers } from "../Ops/Fibers.js"
import { ChangeLog } from "./ChangeLog.js"

/** Reservations logged in one statement. */
const BATCH = 500
/**
 * After an announcement, how long to let more buys commit before logging: their removals go to
 * the log, and to every engine and feed client, as one batch instead of one at a time. The item is
 * already unavailable to every buy; only lists show it this much longer.
 */
const GATHER = "50 millis"
/** Only for a dead process's leftovers: this process's own buys announce theirs. */
const POLL_INTERVAL = "5 seconds"

export class CatalogueReservations extends Effect.Service<CatalogueReservations>()("CatalogueReservations", {
  scoped: Effect.gen(function*() {
    const changeLog = yield* ChangeLog
    const fibers = yield* Fibers
    const announced = yield* Queue.sliding<void>(1)

    /** Logs queued reservations until fewer than a batch are left. */
    const logQueued: Effect.Effect<void, unknown> = Effect.flatMap(changeLog.logReservations(BATCH), (logged) => logged === BATCH ? logQueued : Effect.void)

    yield* fibers.supervise("catalogue-reservations", (beat) =>
      Effect.forever(Effect.gen(function*() {
        yield* logQueued
        yield* beat
        const woken = yield* Queue.take(announced).pipe(Effect.timeoutOption(POLL_INTERVAL))
        if (woken._tag === "Some") yield* Effect.sleep(GATHER)
      })))

    return {
      /** A buy of this process committed a reservation (synchronous: the fast lane calls it too). */
      announce: (): void => {
        announced.unsafeOffer(undefined)
      }
    } as const
  }),
  dependencies: [ChangeLog.Default, Fibers.Default]
}) {}
