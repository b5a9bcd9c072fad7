/**
 * Reading purchases (spec 4.3): one by id, the latest attempt of a custom_id, the idempotency
 * record, the list, and waiting for a purchase's state to change. Buying is the buy engine's
 * (BuyEngine.ts).
 */
import { Effect, Option } from "effect"
import { CreatedAtIdPosition, decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import type { PurchaseStatus } from "../Domain/Purchase.js"
import { Ledger } from "../Ledger/Ledger.js"
import { PurchaseNotifications } from "./Notifications.js"
import { PurchasesRepo } from "./Repo.js"
import type { PurchaseRow } from "./Rows.js"

export interface ListQuery {
  readonly cursor?: string | undefined
  readonly limit: number
  readonly status?: PurchaseStatus | undefined
  readonly customId?: string | undefined
  readonly targetSteamId?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
}

export class Purchases extends Effect.Service<Purchases>()("Purchases", {
  effect: Effect.gen(function*() {
    const repo = yield* PurchasesRepo
    const ledger = yield* Ledger
    const notifications = yield* PurchaseNotifications

    const byId = (merchantId: string, purchaseId: string) => Effect.orDie(repo.byId({ merchantId, purchaseId }))

    /** The latest attempt of a custom_id (by-name cycles have several). */
    const latestByCustomId = (merchantId: string, customId: string) => Effect.orDie(repo.latestByCustomId({ merchantId, customId }))

    /** The idempotency record of a custom_id. */
    const request = (merchantId: string, customId: string) => Effect.orDie(repo.request({ merchantId, customId }))

    const availableCents = (merchantId: string) =>
      ledger.balance(merchantId).pipe(Effect.map(Option.match({ onNone: () => 0, onSome: (b) => b.available })), Effect.orDie)

    /** Lists a merchant's purchases, newest first (spec 4.3). */
    const list = (merchantId: string, query: ListQuery) =>
      Effect.gen(function*() {
        const after = query.cursor === undefined ? undefined : yield* decodeCursor(CreatedAtIdPosition, query.cursor)
        // one more than the page: whether a next page exists
        const rows = yield* repo.page({
          merchantId,
          status: query.status,
          customId: query.customId,
          targetSteamId: query.targetSteamId,
          from: query.from,
          to: query.to,
          after,
          limit: query.limit + 1
        }).pipe(Effect.orDie)
        const page = rows.slice(0, query.limit)
        const last = page[page.length - 1]
        return {
          purchases: page,
          nextCursor: rows.length > query.limit && last !== undefined ? encodeCursor([last.position, last.id]) : null
        }
      }).pipe(Effect.withSpan("Purchases.list"))

    /**
     * Waits (at most `timeout`) until `done` holds for the purchase, woken by change notifications
     * from any process; returns the purchase as last read.
     */
    const waitFor = (merchantId: string, purchaseId: string, done: (row: PurchaseRow) => boolean, timeoutMillis: number) =>
      Effect.scoped(Effect.gen(function*() {
        const subscription = yield* notifications.subscribe
        const deadline = Date.now() + timeoutMillis
        for (;;) {
          const row = Option.getOrThrow(yield* byId(merchantId, purchaseId))
          const remaining = deadline - Date.now()
          if (done(row) || remaining <= 0) return row
          yield* subscription.take.pipe(
            Effect.repeat({ until: (id) => id === purchaseId }),
            Effect.timeoutOption(Math.min(remaining, 1_000))
          )
        }
      }))

    return { byId, latestByCustomId, request, availableCents, list, waitFor } as const
  }),
  dependencies: [PurchasesRepo.Default, Ledger.Default, PurchaseNotifications.Default]
}) {}
