/**
 * The SQL of reading purchases (Purchases.ts, BuyByName.ts): one by id, the latest attempt and all
 * attempts of a custom_id, the idempotency record, a merchant's page, and the purchase_changed
 * channel every transaction that changes purchases notifies at commit (Notifications.ts listens).
 * The buy's statements are BuyStatements.ts's, the worker's WorkerRepo.ts's, the by-name cycles'
 * records CyclesRepo.ts's.
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { DbNotifications } from "../Db/Notifications.js"
import { PurchaseStatus } from "../Domain/Purchase.js"
import { purchaseColumns, PurchaseRow } from "./Rows.js"

export const PURCHASE_CHANGED = "purchase_changed"

export const RequestRow = Schema.Struct({
  kind: Schema.Literal("by_id", "by_name"),
  itemId: Schema.NullOr(Schema.String),
  targetTradeUrl: Schema.String,
  targetSteamId: Schema.String,
  cycleState: Schema.Literal("running", "done")
})
export type RequestRow = typeof RequestRow.Type

/** A purchase, and a custom_id, of a merchant: what the reads are keyed by. */
const PurchaseKey = Schema.Struct({ merchantId: Schema.String, purchaseId: Schema.String })
export const CustomIdKey = Schema.Struct({ merchantId: Schema.String, customId: Schema.String })

/** A page of a merchant's purchases, newest first: the filters, and the (created_at, id) it starts after. */
const PageRequest = Schema.Struct({
  merchantId: Schema.String,
  status: Schema.optional(PurchaseStatus),
  customId: Schema.optional(Schema.String),
  targetSteamId: Schema.optional(Schema.String),
  from: Schema.optional(Schema.DateFromSelf),
  to: Schema.optional(Schema.DateFromSelf),
  after: Schema.optional(Schema.Tuple(Schema.String, Schema.String)),
  limit: Schema.Number
})

export class PurchasesRepo extends Effect.Service<PurchasesRepo>()("PurchasesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const notifications = yield* DbNotifications
    const columns = purchaseColumns(sql)

    /** The merchant's purchase of an id. */
    const byId = SqlSchema.findOne({
      Request: PurchaseKey,
      Result: PurchaseRow,
      execute: ({ merchantId, purchaseId }) => sql`SELECT ${columns} FROM purchases WHERE id = ${purchaseId} AND merchant_id = ${merchantId}`
    })

    /** The latest attempt of a custom_id (by-name cycles have several). */
    const latestByCustomId = SqlSchema.findOne({
      Request: CustomIdKey,
      Result: PurchaseRow,
      execute: ({ customId, merchantId }) =>
        sql`SELECT ${columns} FROM purchases WHERE merchant_id = ${merchantId} AND custom_id = ${customId} ORDER BY attempt DESC LIMIT 1`
    })

    /** Every attempt of a custom_id, the first first. */
    const attempts = SqlSchema.findAll({
      Request: CustomIdKey,
      Result: PurchaseRow,
      execute: ({ customId, merchantId }) =>
        sql`SELECT ${columns} FROM purchases WHERE merchant_id = ${merchantId} AND custom_id = ${customId}
            ORDER BY attempt`
    })

    /** The idempotency record of a custom_id. */
    const request = SqlSchema.findOne({
      Request: CustomIdKey,
      Result: RequestRow,
      execute: ({ customId, merchantId }) =>
        sql`SELECT kind, item_id AS "itemId", target_trade_url AS "targetTradeUrl", target_steam_id AS "targetSteamId",
                   cycle_state AS "cycleState"
            FROM purchase_requests WHERE merchant_id = ${merchantId} AND custom_id = ${customId}`
    })

    /** Up to `limit` of a merchant's purchases that match the filters, newest first (instants compared to the millisecond). */
    const page = SqlSchema.findAll({
      Request: PageRequest,
      Result: PurchaseRow,
      execute: (q) =>
        sql`
          SELECT ${columns} FROM purchases
          WHERE merchant_id = ${q.merchantId}
          ${q.status === undefined ? sql`` : sql`AND status = ${q.status}`}
          ${q.customId === undefined ? sql`` : sql`AND custom_id = ${q.customId}`}
          ${q.targetSteamId === undefined ? sql`` : sql`AND target_steam_id = ${q.targetSteamId}`}
          ${q.from === undefined ? sql`` : sql`AND date_trunc('milliseconds', created_at) >= ${q.from}`}
          ${q.to === undefined ? sql`` : sql`AND date_trunc('milliseconds', created_at) <= ${q.to}`}
          ${q.after === undefined ? sql`` : sql`AND (created_at, id) < (${q.after[0]}::timestamptz, ${q.after[1]}::uuid)`}
          ORDER BY created_at DESC, id DESC
          LIMIT ${q.limit}`
    })

    /**
     * The notification of changed purchases as an SQL expression, to put in a statement of the
     * transaction that changes them (it is sent at commit; no round trip of its own). `purchaseIds`:
     * an id, or an expression of several, comma-separated (one notification for a statement's purchases).
     */
    const notifying = (purchaseIds: string | Statement.Fragment) => sql`pg_notify(${PURCHASE_CHANGED}, ${purchaseIds})`

    /** The payloads of purchase_changed (ids, comma-separated), and LISTENING each time the connection listens anew. */
    const changes = notifications.listen(PURCHASE_CHANGED)

    return { byId, latestByCustomId, attempts, request, page, notifying, changes } as const
  })
}) {}
