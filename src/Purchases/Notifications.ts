/**
 * Purchase change notifications: every transaction that changes purchases sends
 * pg_notify('purchase_changed', ids) (their ids, comma-separated: `PurchasesRepo.notifying`),
 * delivered at commit to every process; here they fan out, one id at a time, to
 * in-process waiters (buy-sync, buy-by-name) and wake the purchase worker: each one is a step's
 * end with its next schedule, which may give it work. A step of this process's own worker, which
 * knows the schedule it wrote, does not wake it.
 */
import { Effect, PubSub, Queue, Stream } from "effect"
import { LISTENING } from "../Db/Listen.js"
import { Fibers } from "../Ops/Fibers.js"
import { PurchasesRepo } from "./Repo.js"

/** How long a change announced by `changingHere` may take to commit; an entry older than that (its transaction rolled back) wakes the worker again. */
const HERE_EXPIRY_MS = 10_000

export class PurchaseNotifications extends Effect.Service<PurchaseNotifications>()("PurchaseNotifications", {
  scoped: Effect.gen(function*() {
    const repo = yield* PurchasesRepo
    const fibers = yield* Fibers
    const changes = yield* PubSub.unbounded<string>()
    const work = yield* Queue.sliding<void>(1)
    // purchase id -> until when its next notification is one of this process's worker's own changes
    const here = new Map<string, number>()
    const madeHere = (purchaseId: string) => {
      const until = here.get(purchaseId)
      here.delete(purchaseId)
      return until !== undefined && until >= Date.now()
    }

    yield* fibers.supervise("purchase-notifications", (beat) =>
      repo.changes.pipe(Stream.runForEach((payload) =>
        Effect.suspend(() => {
          // (re)listening: another process's changes meanwhile went unheard; the worker looks again
          if (payload === LISTENING) return Effect.zipRight(Queue.offer(work, undefined), beat)
          const ids = payload.split(",")
          // every id's mark is taken, even when an earlier one already decided to wake the worker
          const elsewhere = ids.map(madeHere).includes(false)
          return Effect.all([
            PubSub.publishAll(changes, ids),
            elsewhere ? Queue.offer(work, undefined) : Effect.void,
            beat
          ], { discard: true })
        })
      )))

    /**
     * This process's worker is about to commit a change of the purchase and schedules its next look
     * itself: the change's notification (one) need not wake it.
     */
    const changingHere = (purchaseId: string) =>
      Effect.sync(() => {
        const now = Date.now()
        if (here.size > 10_000) { for (const [id, until] of here) if (until < now) here.delete(id) }
        here.set(purchaseId, now + HERE_EXPIRY_MS)
      })

    /** A subscription to changed purchase ids (scoped). */
    const subscribe = PubSub.subscribe(changes)

    /** Completes when some purchase changed (the worker's wake-up). */
    const awaitWork = Queue.take(work)

    return { subscribe, awaitWork, changingHere } as const
  }),
  dependencies: [PurchasesRepo.Default, Fibers.Default]
}) {}
