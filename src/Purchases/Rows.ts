/** The purchase row as read from the database, and the public shapes built from it (spec 2.8 to 2.10). */
import { SqlClient } from "@effect/sql"
import { Schema } from "effect"
import { Int8 } from "../Domain/Db.js"
import { usd } from "../Domain/Money.js"
import { FailureCode, PurchaseStatus } from "../Domain/Purchase.js"
import { PurchaseRejected } from "./Api.js"

export const PurchaseRow = Schema.Struct({
  id: Schema.String,
  merchantId: Schema.String,
  customId: Schema.String,
  attempt: Schema.Number,
  itemId: Schema.NullOr(Schema.String),
  marketHashName: Schema.String,
  imageUrl: Schema.NullOr(Schema.String),
  exterior: Schema.NullOr(Schema.String),
  float: Schema.NullOr(Schema.Number),
  deliveryType: Schema.Literal("instant", "manual"),
  estimatedDeliveryMinutes: Schema.NullOr(Schema.Number),
  priceCents: Int8,
  sim: Schema.NullOr(Schema.String),
  targetTradeUrl: Schema.String,
  targetSteamId: Schema.String,
  status: PurchaseStatus,
  providerRequestId: Schema.NullOr(Schema.String),
  acknowledged: Schema.Boolean,
  topupWaiting: Schema.Boolean,
  tradeOfferId: Schema.NullOr(Schema.String),
  tradeOfferUrl: Schema.NullOr(Schema.String),
  failureCode: Schema.NullOr(FailureCode),
  failureMessage: Schema.NullOr(Schema.String),
  refundedCents: Schema.NullOr(Int8),
  createdAt: Schema.DateFromSelf,
  completedAt: Schema.NullOr(Schema.DateFromSelf),
  watching: Schema.Boolean,
  position: Schema.String
})
export type PurchaseRow = typeof PurchaseRow.Type

/** Decodes purchase rows; an Either, so that it also serves as an Effect (`Effect.flatMap(decodeRows)`). */
export const decodeRows = Schema.decodeUnknownEither(Schema.Array(PurchaseRow))

/** The columns every purchase read selects, as PurchaseRow names them (the benches' bare statements use the text too). */
export const PURCHASE_COLUMNS = `
  id, merchant_id AS "merchantId", custom_id AS "customId", attempt, item_id AS "itemId",
  market_hash_name AS "marketHashName", image_url AS "imageUrl", exterior, float, delivery_type AS "deliveryType",
  estimated_delivery_minutes AS "estimatedDeliveryMinutes", price_cents AS "priceCents", sim,
  target_trade_url AS "targetTradeUrl", target_steam_id AS "targetSteamId", status,
  provider_request_id AS "providerRequestId", acknowledged_at IS NOT NULL AS acknowledged, topup_waiting AS "topupWaiting",
  trade_offer_id AS "tradeOfferId", trade_offer_url AS "tradeOfferUrl", failure_code AS "failureCode",
  failure_message AS "failureMessage", refunded_cents AS "refundedCents", created_at AS "createdAt",
  completed_at AS "completedAt", watch_until IS NOT NULL AS watching,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position`

export const purchaseColumns = (sql: SqlClient.SqlClient) => sql.literal(PURCHASE_COLUMNS)

/** PurchaseCreated (spec 2.8). */
export const purchaseCreated = (row: PurchaseRow, balanceAfterCents: number) => ({
  purchase_id: row.id,
  custom_id: row.customId,
  status: row.status,
  item: {
    market_hash_name: row.marketHashName,
    price: usd(row.priceCents),
    delivery_type: row.deliveryType,
    estimated_delivery_minutes: row.estimatedDeliveryMinutes
  },
  balance_after: usd(balanceAfterCents),
  created_at: row.createdAt.toISOString()
})

/** PurchaseDetail (spec 2.9). */
export const purchaseDetail = (row: PurchaseRow) => ({
  purchase_id: row.id,
  custom_id: row.customId,
  status: row.status,
  item: {
    id: row.itemId,
    market_hash_name: row.marketHashName,
    image_url: row.imageUrl,
    exterior: row.exterior,
    float: row.float,
    delivery_type: row.deliveryType,
    estimated_delivery_minutes: row.estimatedDeliveryMinutes
  },
  price: usd(row.priceCents),
  target_steam_id: row.targetSteamId,
  trade_offer_id: row.tradeOfferId,
  trade_offer_url: row.tradeOfferUrl,
  created_at: row.createdAt.toISOString(),
  completed_at: row.completedAt === null ? null : row.completedAt.toISOString(),
  failure: row.status === "failed" && row.failureCode !== null
    ? { code: row.failureCode, message: row.failureMessage ?? "", refunded_amount: row.refundedCents === null ? null : usd(row.refundedCents) }
    : null
})

/** The rejection of a created purchase that failed (spec 2.10): PurchaseFailedResponse on the wire. */
export const purchaseRejected = (row: PurchaseRow, code: PurchaseRejected["code"], message: string) =>
  new PurchaseRejected({
    code,
    message,
    purchase_id: row.id,
    custom_id: row.customId,
    failure: { code: row.failureCode ?? "UNKNOWN", message: row.failureMessage ?? "" },
    trade_offer_id: row.tradeOfferId,
    trade_offer_url: row.tradeOfferUrl
  })

/** The `data` of a purchase webhook event (CONTRACT 4); unknown values are omitted by the outbox. */
export const purchaseEventData = (
  row: Pick<
    PurchaseRow,
    | "id"
    | "customId"
    | "status"
    | "marketHashName"
    | "priceCents"
    | "targetSteamId"
    | "tradeOfferId"
    | "tradeOfferUrl"
    | "failureCode"
    | "failureMessage"
    | "refundedCents"
  >,
  extra: { readonly balanceAfterCents?: number; readonly refundedCents?: number } = {}
) => ({
  purchase_id: row.id,
  custom_id: row.customId,
  status: row.status,
  market_hash_name: row.marketHashName,
  price: usd(row.priceCents),
  target_steam_id: row.targetSteamId,
  trade_offer_id: row.tradeOfferId,
  trade_offer_url: row.tradeOfferUrl,
  failure_code: row.failureCode,
  failure_message: row.failureMessage,
  refunded_amount: extra.refundedCents === undefined ? (row.refundedCents === null ? undefined : usd(row.refundedCents)) : usd(extra.refundedCents),
  balance_after: extra.balanceAfterCents === undefined ? undefined : usd(extra.balanceAfterCents)
})
