/**
 * Reading purchases (spec 4.3): one by id, the latest attempt of a custom_id, the idempotency
 * record, the list, and waiting for a purchase's state to change. Buying is the buy engine's
 * (BuyEngine.ts).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { CreatedAtIdPosition, decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import type { PurchaseStatus } from "../Domain/Purchase.js"
import { Ledger } from "../Ledger/Ledger.js"
import { PurchaseNotifications } from "./Notifications.js"
import { decodeRows, purchaseColumns, PurchaseRow } from "./Rows.js"

const RequestRow = Schema.Struct({
  kind: Schema.Literal("by_id", "by_name"),
  itemId: Schema.NullOr(Schema.String),
  targetTradeUrl: Schema.String,
  targetSteamId: Schema.String,
  cycleState: Schema.Literal("running", "done")
})
export type RequestRow = typeof RequestRow.Type

/** A purchase, and a custom_id, of a merchant: what the reads are keyed by. */
const PurchaseKey = Schema.Struct({ merchantId: Schema.String, purchaseId: Schema.String })
const CustomIdKey = Schema.Struct({ merchantId: Schema.String, customId: Schema.String })

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
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const notifications = yield* PurchaseNotifications

    const columns = purchaseColumns(sql)

    const findById = SqlSchema.findOne({
      Request: PurchaseKey,
      Result: PurchaseRow,
      execute: ({ merchantId, purchaseId }) => sql`SELECT ${columns} FROM purchases WHERE id = ${purchaseId} AND merchant_id = ${merchantId}`
    })
    const byId = (merchantId: string, purchaseId: string) => Effect.orDie(findById({ merchantId, purchaseId }))

    const findLatestByCustomId = SqlSchema.findOne({
      Request: CustomIdKey,
      Result: PurchaseRow,
      execute: ({ customId, merchantId }) =>
        sql`SELECT ${columns} FROM purchases WHERE merchant_id = ${merchantId} AND custom_id = ${customId} ORDER BY attempt DESC LIMIT 1`
    })
    /** The latest attempt of a custom_id (by-name cycles have several). */
    const latestByCustomId = (merchantId: string, customId: string) => Effect.orDie(findLatestByCustomId({ merchantId, customId }))

    const findRequest = SqlSchema.findOne({
      Request: CustomIdKey,
      Result: RequestRow,
      execute: ({ customId, merchantId }) =>
        sql`SELECT kind, item_id AS "itemId", target_trade_url AS "targetTradeUrl", target_steam_id AS "targetSteamId",
                   cycle_state AS "cycleState"
            FROM purchase_requests WHERE merchant_id = ${merchantId} AND custom_id = ${customId}`
    })
    /** The idempotency record of a custom_id. */
    const request = (merchantId: string, customId: string) => Effect.orDie(findRequest({ merchantId, customId }))

    const availableCents = (merchantId: string) =>
      ledger.balance(merchantId).pipe(Effect.map(Option.match({ onNone: () => 0, onSome: (b) => b.available })), Effect.orDie)

    /** Lists a merchant's purchases, newest first (spec 4.3). */
    const list = (merchantId: string, query: ListQuery) =>
      Effect.gen(function*() {
        const after = query.cursor === undefined ? undefined : yield* decodeCursor(CreatedAtIdPosition, query.cursor)
        const rows = yield* sql`
          SELECT ${purchaseColumns(sql)} FROM purchases
          WHERE merchant_id = ${merchantId}
          ${query.status === undefined ? sql`` : sql`AND status = ${query.status}`}
          ${query.customId === undefined ? sql`` : sql`AND custom_id = ${query.customId}`}
          ${query.targetSteamId === undefined ? sql`` : sql`AND target_steam_id = ${query.targetSteamId}`}
          ${query.from === undefined ? sql`` : sql`AND date_trunc('milliseconds', created_at) >= ${query.from}`}
          ${query.to === undefined ? sql`` : sql`AND date_trunc('milliseconds', created_at) <= ${query.to}`}
          ${after === undefined ? sql`` : sql`AND (created_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)`}
          ORDER BY created_at DESC, id DESC
          LIMIT ${query.limit + 1}`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
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
  dependencies: [Ledger.Default]
}) {}
