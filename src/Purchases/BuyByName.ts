/**
 * Buy by name (spec 4.3, 4.4 rule 3): the cheapest live item of the exact name at or below
 * max_price (and within estimated_time) is bought; a rejected attempt (refunded by the worker) is
 * followed by the next cheapest, up to 5 attempts in a shared budget. The cycle runs in the
 * service's scope, not the request's: a client that disconnects stops nothing. One idempotency
 * record per custom_id: a repeat reads the latest attempt and never starts a second cycle.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Fiber, Option } from "effect"
import { Settings } from "../Config.js"
import { CatalogueEngine } from "../Catalogue/Engine.js"
import { centsFloor } from "../Domain/Money.js"
import { Conflict, InsufficientBalance, NoItemsFound, PurchaseFailed } from "../Domain/Errors.js"
import { Purchases, type Recipient } from "./Purchases.js"
import type { PurchaseRow } from "./Rows.js"

const MAX_ATTEMPTS = 5
/** Items that vanished between the index and the lock do not count as attempts, up to this many. */
const MAX_PICKS = 20

export interface BuyByNameRequest {
  readonly merchantId: string
  readonly marketHashName: string
  readonly maxPrice: number
  readonly customId: string
  readonly recipient: Recipient
  readonly estimatedTime: number | null
}

export type ByNameOutcome =
  | { readonly _tag: "accepted"; readonly purchase: PurchaseRow; readonly balanceCents: number }
  | { readonly _tag: "in_flight"; readonly purchase: PurchaseRow; readonly balanceCents: number }
  | { readonly _tag: "failed_attempt"; readonly purchase: PurchaseRow }

export type ByNameError = NoItemsFound | InsufficientBalance | PurchaseFailed | Conflict

export class BuyByName extends Effect.Service<BuyByName>()("BuyByName", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* Settings
    const engine = yield* CatalogueEngine
    const purchases = yield* Purchases
    const cycles = yield* Effect.scope

    const verdict = (row: PurchaseRow) => row.status === "failed" || row.acknowledged || row.topupWaiting || row.status === "completed"

    const cycle = (request: BuyByNameRequest): Effect.Effect<ByNameOutcome, ByNameError> =>
      Effect.gen(function*() {
        const deadline = Date.now() + settings.byNameBudgetSeconds * 1000
        const tried = new Set<string>()
        let attempts = 0
        let last: PurchaseRow | undefined
        const filters = { marketHashName: request.marketHashName, maxPrice: centsFloor(request.maxPrice), maxMinutes: request.estimatedTime ?? undefined }
        while (attempts < MAX_ATTEMPTS && tried.size < MAX_PICKS && Date.now() < deadline) {
          yield* engine.refresh
          const candidate = engine.page(filters, "price_asc", undefined, tried.size + 1).entries.find((e) => !tried.has(e.id))
          if (candidate === undefined) break
          tried.add(candidate.id)
          const created = yield* purchases.buyAttempt({
            merchantId: request.merchantId,
            itemId: candidate.id,
            maxPrice: request.maxPrice,
            customId: request.customId,
            attempt: attempts + 1,
            recipient: request.recipient
          }).pipe(purchases.mapSqlErrors, Effect.catchTag("ParseError", Effect.die), Effect.either)
          if (created._tag === "Left") {
            if (created.left._tag === "InsufficientBalance") return yield* created.left
            continue // gone or repriced since the index saw it: pick the next one
          }
          attempts++
          const seen = yield* purchases.waitFor(request.merchantId, created.right.purchase.id, verdict, Math.max(0, deadline - Date.now()))
          if (seen.status !== "failed") {
            const balanceCents = yield* purchases.availableCents(request.merchantId)
            return seen.acknowledged || seen.status === "completed"
              ? { _tag: "accepted" as const, purchase: seen, balanceCents }
              : { _tag: "in_flight" as const, purchase: seen, balanceCents }
          }
          last = seen
        }
        if (attempts === 0) {
          return yield* new NoItemsFound({ message: `No active item named ${JSON.stringify(request.marketHashName)} at or below max_price.` })
        }
        return yield* new PurchaseFailed({
          message: `No attempt succeeded (${attempts} tried${last?.failureCode ? `, last: ${last.failureCode}` : ""}); failed attempts are refunded.`
        })
      }).pipe(
        Effect.tapError((error) =>
          // Nothing was bought: the request leaves no trace, so it can be sent again.
          error._tag === "NoItemsFound" || error._tag === "InsufficientBalance"
            ? Effect.gen(function*() {
              const any = yield* purchases.latestByCustomId(request.merchantId, request.customId)
              if (Option.isNone(any)) {
                yield* sql`DELETE FROM purchase_requests WHERE merchant_id = ${request.merchantId} AND custom_id = ${request.customId}`
              }
            }).pipe(Effect.orDie)
            : Effect.void
        ),
        Effect.ensuring(sql`UPDATE purchase_requests SET cycle_state = 'done'
                            WHERE merchant_id = ${request.merchantId} AND custom_id = ${request.customId}`.pipe(Effect.orDie))
      )

    /** A repeat: the latest attempt by custom_id alone, waiting for the first if the cycle just began. */
    const repeat = (request: BuyByNameRequest): Effect.Effect<ByNameOutcome, ByNameError> =>
      Effect.gen(function*() {
        const deadline = Date.now() + settings.byNameBudgetSeconds * 1000
        for (;;) {
          const latest = yield* purchases.latestByCustomId(request.merchantId, request.customId)
          const saved = yield* purchases.request(request.merchantId, request.customId)
          if (Option.isSome(latest)) {
            const row = latest.value
            if (row.status === "failed") return { _tag: "failed_attempt" as const, purchase: row }
            const balanceCents = yield* purchases.availableCents(request.merchantId)
            return row.acknowledged || row.status === "completed"
              ? { _tag: "accepted" as const, purchase: row, balanceCents }
              : { _tag: "in_flight" as const, purchase: row, balanceCents }
          }
          if (Option.isNone(saved) || saved.value.cycleState === "done" || Date.now() >= deadline) {
            return yield* new Conflict({ message: "The first request with this custom_id has not created an attempt; retry once." })
          }
          yield* Effect.sleep("50 millis")
        }
      })

    const buy = (request: BuyByNameRequest) =>
      Effect.gen(function*() {
        const inserted = yield* sql`
          INSERT INTO purchase_requests (merchant_id, custom_id, kind, market_hash_name, target_trade_url, target_steam_id, cycle_state)
          VALUES (${request.merchantId}, ${request.customId}, 'by_name', ${request.marketHashName}, ${request.recipient.tradeUrl},
                  ${request.recipient.steamId}, 'running')
          ON CONFLICT (merchant_id, custom_id) DO NOTHING RETURNING custom_id`.pipe(Effect.orDie)
        if (inserted.length === 0) return yield* repeat(request)
        const fiber = yield* Effect.forkIn(cycle(request), cycles)
        return yield* Fiber.join(fiber)
      }).pipe(Effect.withSpan("BuyByName.buy"))

    return { buy } as const
  }),
  dependencies: [Purchases.Default]
}) {}
