/** The purchase endpoints (spec 2.8 to 2.10, 4.3, 4.4). */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { isCalendarDateTime, IsoDateTime, StorableString } from "../Domain/Db.js"
import {
  failsAs,
  InvalidCustomId,
  InvalidEstimatedTime,
  InvalidItemId,
  InvalidMarketHashName,
  InvalidMaxPrice,
  InvalidStatus,
  InvalidSteamId,
  InvalidTradeUrl,
  PurchaseNotFound,
  Wire
} from "../Domain/Errors.js"
import { NextCursor, PageQuery } from "../Domain/Page.js"
import { FailureCode, PurchaseStatus } from "../Domain/Purchase.js"
import { isSteamId64, parseTradeUrl, STEAM_ID64_PATTERN, TRADE_URL_PATTERN } from "../Domain/TradeUrl.js"
import { Authentication, Usd } from "../Merchants/Api.js"

const EMPTY_UUID = "00000000-0000-0000-0000-000000000000"

const TradeUrl = Schema.String.pipe(
  Schema.filter((s) => parseTradeUrl(s) !== undefined, {
    message: () => "a trade URL https://steamcommunity.com/tradeoffer/new/?partner=<id>&token=<8 chars>"
  })
).annotations({ jsonSchema: { pattern: TRADE_URL_PATTERN }, ...failsAs(InvalidTradeUrl) })
/**
 * Only the sign is checked here: JSON.parse reads 1e-400 as 0 and 1e400 as Infinity, so whether
 * the literal is above 0 is the handlers' to say (Http.ts `exactMaxPrice`, from the body's text).
 */
const MaxPrice = Schema.Number.pipe(Schema.filter((n) => n >= 0 || "max_price must be greater than 0")).annotations({
  description: "Consent ceiling in USD; compared exactly with the live price",
  jsonSchema: { exclusiveMinimum: 0 },
  ...failsAs(InvalidMaxPrice)
})
const CustomId = StorableString.pipe(
  Schema.filter((s) => [...s].length >= 1 && [...s].length <= 100, { message: () => "custom_id must be 1 to 100 characters" })
).annotations({ jsonSchema: { minLength: 1, maxLength: 100 }, ...failsAs(InvalidCustomId) })

export const BuyRequest = Schema.Struct({
  item_id: Schema.UUID.pipe(Schema.filter((s) => s !== EMPTY_UUID, { message: () => "item_id must not be the empty UUID" }))
    .annotations({ jsonSchema: { not: { const: EMPTY_UUID } }, ...failsAs(InvalidItemId) }),
  max_price: MaxPrice,
  custom_id: CustomId,
  target_trade_url: TradeUrl,
  target_steam_id: Schema.optional(Schema.NullOr(
    StorableString.pipe(
      Schema.filter(isSteamId64, { message: () => "target_steam_id must be a SteamID64" })
    ).annotations({ jsonSchema: { pattern: STEAM_ID64_PATTERN }, ...failsAs(InvalidSteamId) })
  ))
}).annotations({
  identifier: "BuyRequest",
  examples: [{
    item_id: "3f8a2c1e-5b7d-4e9f-a1c2-6d8e0b4f2a91",
    max_price: 12.5,
    custom_id: "order-2026-11-0001",
    target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
  }]
})

export const BuyByNameRequest = Schema.Struct({
  market_hash_name: StorableString.pipe(Schema.minLength(1), Schema.maxLength(200)).annotations(failsAs(InvalidMarketHashName)),
  max_price: MaxPrice,
  trade_url: TradeUrl,
  custom_id: CustomId,
  // any whole number of minutes from 10 (spec 4.3 sets no upper bound; the handler caps it at the longest an item may have)
  estimated_time: Schema.optional(Schema.NullOr(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isInteger(n) || "estimated_time must be a whole number of minutes"),
      Schema.greaterThanOrEqualTo(10)
    ).annotations({ jsonSchema: { type: "integer", minimum: 10 }, ...failsAs(InvalidEstimatedTime) })
  ))
}).annotations({ identifier: "BuyByNameRequest" })

export const PurchaseCreated = Schema.Struct({
  purchase_id: Schema.UUID,
  custom_id: Schema.String,
  status: PurchaseStatus,
  item: Schema.Struct({
    market_hash_name: Schema.String,
    price: Usd,
    delivery_type: Schema.Literal("instant", "manual"),
    estimated_delivery_minutes: Schema.NullOr(Schema.Int)
  }),
  balance_after: Usd,
  created_at: IsoDateTime
}).annotations({
  identifier: "PurchaseCreated",
  examples: [{
    purchase_id: "9b1d4c2e-7a3f-4e8b-b5c6-1f2e3d4c5b6a",
    custom_id: "order-2026-11-0001",
    status: "created",
    item: { market_hash_name: "AK-47 | Redline (Field-Tested)", price: 12.34, delivery_type: "instant", estimated_delivery_minutes: null },
    balance_after: 987.66,
    created_at: "2026-11-27T12:00:00.000Z"
  }]
})

const Accepted = PurchaseCreated.annotations(HttpApiSchema.annotations({ status: 202 }))

export const PurchaseDetail = Schema.Struct({
  purchase_id: Schema.UUID,
  custom_id: Schema.String,
  status: PurchaseStatus,
  item: Schema.Struct({
    id: Schema.NullOr(Schema.UUID),
    market_hash_name: Schema.String,
    image_url: Schema.NullOr(Schema.String),
    exterior: Schema.NullOr(Schema.String),
    float: Schema.NullOr(Schema.Number),
    delivery_type: Schema.Literal("instant", "manual"),
    estimated_delivery_minutes: Schema.NullOr(Schema.Int)
  }),
  price: Usd,
  target_steam_id: Schema.NullOr(Schema.String),
  trade_offer_id: Schema.NullOr(Schema.String),
  trade_offer_url: Schema.NullOr(Schema.String),
  created_at: IsoDateTime,
  completed_at: Schema.NullOr(IsoDateTime),
  failure: Schema.NullOr(Schema.Struct({
    code: FailureCode,
    message: Schema.String,
    refunded_amount: Schema.NullOr(Usd)
  }))
}).annotations({ identifier: "PurchaseDetail" })

export const PurchaseList = Schema.Struct({
  purchases: Schema.Array(PurchaseDetail),
  next_cursor: NextCursor
}).annotations({ identifier: "PurchaseList" })

const RejectedCode = Schema.Literal("MERCHANT_PURCHASE_FAILED", "MERCHANT_ITEM_UNAVAILABLE", "MERCHANT_PRICE_CHANGED")
const rejectedPurchase = {
  purchase_id: Schema.UUID,
  custom_id: Schema.String,
  failure: Schema.Struct({ code: FailureCode, message: Schema.String }),
  trade_offer_id: Schema.NullOr(Schema.String),
  trade_offer_url: Schema.NullOr(Schema.String)
}

/**
 * A created purchase that failed (spec 2.10): /buy-sync's rejection before acknowledgement, and
 * by-name's failed latest attempt. The error carries the purchase; its wire form is below.
 */
export class PurchaseRejected extends Schema.TaggedError<PurchaseRejected>()("PurchaseRejected", {
  code: RejectedCode,
  message: Schema.String,
  ...rejectedPurchase
}) {}

/** 409 PurchaseFailedResponse: the spec's Error body beside the failed purchase. */
export const PurchaseFailedResponse = Schema.transform(
  Schema.Struct({ error: Schema.Struct({ code: RejectedCode, message: Schema.String }), ...rejectedPurchase }),
  PurchaseRejected,
  {
    strict: true,
    decode: ({ error, ...purchase }) => new PurchaseRejected({ code: error.code, message: error.message, ...purchase }),
    encode: ({ code, message, purchase_id, custom_id, failure, trade_offer_id, trade_offer_url }) => ({
      error: { code, message },
      purchase_id,
      custom_id,
      failure,
      trade_offer_id,
      trade_offer_url
    })
  }
).annotations({ identifier: "PurchaseFailedResponse", ...HttpApiSchema.annotations({ status: 409 }) })

const DateTime = Schema.String.pipe(
  Schema.filter(isCalendarDateTime, { message: () => "an ISO 8601 date-time of a real calendar date, years 1 to 9999" })
).annotations({ jsonSchema: { format: "date-time" } })

/** /buy and /buy-sync share the body, the validation and the pre-check errors (spec 4.3). */
const buyEndpoint = HttpApiEndpoint.post("buy", "/buy").setPayload(BuyRequest).addSuccess(PurchaseCreated, { status: 201 })
  .addError(Wire.InvalidItemId).addError(Wire.InvalidMaxPrice).addError(Wire.InvalidCustomId).addError(Wire.InvalidSteamId)
  .addError(Wire.SteamIdMismatch).addError(Wire.InvalidTradeUrl).addError(Wire.InsufficientBalance).addError(Wire.ItemNotFound)
  .addError(Wire.DuplicateCustomId).addError(Wire.ItemUnavailable).addError(Wire.PriceChanged).addError(Wire.Conflict)

const buySyncEndpoint = HttpApiEndpoint.post("buySync", "/buy-sync").setPayload(BuyRequest)
  .addSuccess(PurchaseCreated).addSuccess(Accepted)
  .addError(Wire.InvalidItemId).addError(Wire.InvalidMaxPrice).addError(Wire.InvalidCustomId).addError(Wire.InvalidSteamId)
  .addError(Wire.SteamIdMismatch).addError(Wire.InvalidTradeUrl).addError(Wire.InsufficientBalance).addError(Wire.ItemNotFound)
  .addError(Wire.DuplicateCustomId).addError(Wire.ItemUnavailable).addError(Wire.PriceChanged).addError(Wire.Conflict)
  .addError(PurchaseFailedResponse)

/** The filters and paging of the purchase list (spec 4.3), here and in the cabinet. */
export const PurchaseListQuery = Schema.Struct({
  ...PageQuery,
  status: Schema.optional(PurchaseStatus.annotations(failsAs(InvalidStatus))),
  custom_id: Schema.optional(StorableString),
  target_steam_id: Schema.optional(StorableString),
  from: Schema.optional(DateTime),
  to: Schema.optional(DateTime)
})

export class PurchasesApi extends HttpApiGroup.make("purchases")
  .add(buyEndpoint)
  .add(buySyncEndpoint)
  .add(
    HttpApiEndpoint.post("buyByName", "/buy-by-name").setPayload(BuyByNameRequest)
      .addSuccess(PurchaseCreated).addSuccess(Accepted)
      .addError(Wire.InvalidMarketHashName).addError(Wire.InvalidMaxPrice).addError(Wire.InvalidTradeUrl)
      .addError(Wire.InvalidCustomId).addError(Wire.InvalidEstimatedTime).addError(Wire.NoItemsFound)
      .addError(Wire.InsufficientBalance).addError(Wire.PurchaseFailed).addError(PurchaseFailedResponse)
      .addError(Wire.Conflict)
  )
  .add(
    HttpApiEndpoint.get("listPurchases", "/purchases")
      .setUrlParams(PurchaseListQuery)
      .addSuccess(PurchaseList)
      .addError(Wire.InvalidQuery)
      .addError(Wire.InvalidStatus)
  )
  .add(
    HttpApiEndpoint.get("getPurchase", "/purchases/:purchaseId")
      .setPath(Schema.Struct({ purchaseId: Schema.UUID.annotations(failsAs(PurchaseNotFound)) }))
      .addSuccess(PurchaseDetail)
      .addError(Wire.PurchaseNotFound)
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Purchases")
{}
