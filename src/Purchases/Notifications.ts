/**
 * Purchase change notifications: every transaction that changes a purchase sends
 * pg_notify('purchase_changed', id), delivered at commit to every process; here they fan out to
 * in-process waiters (buy-sync, buy-by-name) and wake the purchase worker: each one is a new
 * purchase or a step's end with its next schedule, which may give it work.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, PubSub, Queue, Stream } from "effect"
import { Fibers } from "../Ops/Fibers.js"

export const PURCHASE_CHANGED = "purchase_changed"

export class PurchaseNotifications extends Effect.Service<PurchaseNotifications>()("PurchaseNotifications", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const fibers = yield* Fibers
    const changes = yield* PubSub.unbounded<string>()
    const work = yield* Queue.sliding<void>(1)

    yield* fibers.supervise("purchase-notifications", (beat) =>
      pg.listen(PURCHASE_CHANGED).pipe(Stream.runForEach((purchaseId) =>
        Effect.all([PubSub.publish(changes, purchaseId), Queue.offer(work, undefined), beat], { discard: true })
      )))

    /**
     * The notification as an SQL expression, to put in a statement of the transaction that changes
     * the purchase (it is sent at commit; no round trip of its own).
     */
    const notifying = (purchaseId: string) => sql`pg_notify(${PURCHASE_CHANGED}, ${purchaseId})`

    /** A subscription to changed purchase ids (scoped). */
    const subscribe = PubSub.subscribe(changes)

    /** Completes when some purchase changed (the worker's wake-up). */
    const awaitWork = Queue.take(work)

    return { notifying, subscribe, awaitWork } as const
  }),
  dependencies: [Fibers.Default]
}) {}
