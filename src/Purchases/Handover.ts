/**
 * New purchases go straight to this process's worker. The buy writes the purchase already leased
 * to the worker (`owner`, for LEASE_SECONDS) and hands it over once its transaction committed (when
 * it is due; one scheduled later is left to a claim), so the worker steps it at once: no claim
 * round trip, no wake-up by notification. If the process dies first, the lease runs out and any
 * process's worker claims the purchase.
 */
import { Effect, Queue } from "effect"
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import type { PurchaseRow } from "./Rows.js"

/** How long a worker holds a purchase it leased before another may claim it. */
export const LEASE_SECONDS = 10

export class PurchaseHandover extends Effect.Service<PurchaseHandover>()("PurchaseHandover", {
  effect: Effect.gen(function*() {
    const owner = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`
    const handedOver = yield* Queue.unbounded<PurchaseRow>()
    return {
      /** This process's worker, as recorded in `purchases.lease_owner`. */
      owner,
      /** A purchase created leased to `owner`, after its transaction committed (synchronous: the fast lane calls it too). */
      handOver: (purchase: PurchaseRow): void => {
        handedOver.unsafeOffer(purchase)
      },
      /** The next purchase handed over (the worker's loop). */
      take: Queue.take(handedOver),
      /** The purchases handed over since, at most `max` (none: an empty array at once). */
      takeUpTo: (max: number) => Effect.map(Queue.takeUpTo(handedOver, max), (chunk) => Array.from(chunk))
    } as const
  })
}) {}
