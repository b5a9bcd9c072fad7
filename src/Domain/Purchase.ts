/** Purchases: public statuses (spec 3.1) and failure codes (spec 7.3). */
import { Schema } from "effect"

export const PurchaseStatus = Schema.Literal("created", "processing", "sent_to_steam", "completed", "failed")
export type PurchaseStatus = typeof PurchaseStatus.Type

export const IN_FLIGHT: ReadonlyArray<PurchaseStatus> = ["created", "processing", "sent_to_steam"]

export const FailureCode = Schema.Literal(
  "INVENTORY_PRIVATE",
  "TRADING_UNAVAILABLE",
  "INVALID_TRADE_URL",
  "TRADE_DECLINED",
  "TRADE_COUNTERED",
  "TRADE_CANCELLED",
  "TRADE_EXPIRED",
  "SELLER_CANCELLED",
  "ITEM_UNAVAILABLE",
  "PRICE_CHANGED",
  "PROVIDER_ERROR",
  "MANUAL_REVIEW",
  "REVERTED_BY_BUYER",
  "REVERTED_BY_SELLER",
  "REVERT_UNKNOWN",
  "UNKNOWN"
)
export type FailureCode = typeof FailureCode.Type
