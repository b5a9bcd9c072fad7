/**
 * Every expected failure of the public API: a tagged error carrying its HTTP status, with a wire
 * schema that encodes it to the spec's Error body `{"error":{"code","message"}}` (spec 2.1, 7.2).
 */
import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Schema } from "effect"

interface ErrorClass<Self, Tag extends string> extends Schema.Schema<Self, { readonly _tag: Tag; readonly message: string }> {
  new(args: { readonly message: string }): Self
}

const registry = new Map<string, { readonly code: string; readonly status: number }>()

/** The wire schema of an error class: the spec's envelope with a literal code. */
const wire = <Self extends { readonly _tag: Tag; readonly message: string }, Tag extends string, const Code extends string>(
  cls: ErrorClass<Self, Tag>,
  tag: Tag,
  code: Code,
  status: number
) => {
  registry.set(tag, { code, status })
  return Schema.transform(
    Schema.Struct({ error: Schema.Struct({ code: Schema.Literal(code), message: Schema.String }) }),
    cls,
    {
      strict: true,
      decode: (body) => ({ _tag: tag, message: body.error.message }),
      encode: (error) => ({ error: { code, message: error.message } })
    }
  ).annotations({ ...HttpApiSchema.annotations({ status }), identifier: code, title: code })
}

const fields = { message: Schema.String }

// 400
export class InvalidQuery extends Schema.TaggedError<InvalidQuery>()("InvalidQuery", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidItemId extends Schema.TaggedError<InvalidItemId>()("InvalidItemId", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidMaxPrice extends Schema.TaggedError<InvalidMaxPrice>()("InvalidMaxPrice", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidCustomId extends Schema.TaggedError<InvalidCustomId>()("InvalidCustomId", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidSteamId extends Schema.TaggedError<InvalidSteamId>()("InvalidSteamId", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class SteamIdMismatch extends Schema.TaggedError<SteamIdMismatch>()("SteamIdMismatch", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidTradeUrl extends Schema.TaggedError<InvalidTradeUrl>()("InvalidTradeUrl", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidMarketHashName extends Schema.TaggedError<InvalidMarketHashName>()("InvalidMarketHashName", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidEstimatedTime extends Schema.TaggedError<InvalidEstimatedTime>()("InvalidEstimatedTime", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class NoItemsFound extends Schema.TaggedError<NoItemsFound>()("NoItemsFound", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidStatus extends Schema.TaggedError<InvalidStatus>()("InvalidStatus", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class InvalidSort extends Schema.TaggedError<InvalidSort>()("InvalidSort", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class WalletNetworkInvalid extends Schema.TaggedError<WalletNetworkInvalid>()("WalletNetworkInvalid", fields, HttpApiSchema.annotations({ status: 400 })) {}
// 401, 402, 403
export class ApiKeyMissing extends Schema.TaggedError<ApiKeyMissing>()("ApiKeyMissing", fields, HttpApiSchema.annotations({ status: 401 })) {}
export class InsufficientBalance extends Schema.TaggedError<InsufficientBalance>()("InsufficientBalance", fields, HttpApiSchema.annotations({ status: 402 })) {}
export class MerchantBlocked extends Schema.TaggedError<MerchantBlocked>()("MerchantBlocked", fields, HttpApiSchema.annotations({ status: 403 })) {}
export class MerchantNotActive extends Schema.TaggedError<MerchantNotActive>()("MerchantNotActive", fields, HttpApiSchema.annotations({ status: 403 })) {}
// 404
export class ItemNotFound extends Schema.TaggedError<ItemNotFound>()("ItemNotFound", fields, HttpApiSchema.annotations({ status: 404 })) {}
export class PurchaseNotFound extends Schema.TaggedError<PurchaseNotFound>()("PurchaseNotFound", fields, HttpApiSchema.annotations({ status: 404 })) {}
export class WalletNotFound extends Schema.TaggedError<WalletNotFound>()("WalletNotFound", fields, HttpApiSchema.annotations({ status: 404 })) {}
// 409
export class DuplicateCustomId extends Schema.TaggedError<DuplicateCustomId>()("DuplicateCustomId", fields, HttpApiSchema.annotations({ status: 409 })) {}
export class ItemUnavailable extends Schema.TaggedError<ItemUnavailable>()("ItemUnavailable", fields, HttpApiSchema.annotations({ status: 409 })) {}
export class PriceChanged extends Schema.TaggedError<PriceChanged>()("PriceChanged", fields, HttpApiSchema.annotations({ status: 409 })) {}
export class PurchaseFailed extends Schema.TaggedError<PurchaseFailed>()("PurchaseFailed", fields, HttpApiSchema.annotations({ status: 409 })) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields, HttpApiSchema.annotations({ status: 409 })) {}
export class WalletIssuanceDisabled extends Schema.TaggedError<WalletIssuanceDisabled>()("WalletIssuanceDisabled", fields, HttpApiSchema.annotations({ status: 409 })) {}
export class WalletCreationNotStarted extends Schema.TaggedError<WalletCreationNotStarted>()("WalletCreationNotStarted", fields, HttpApiSchema.annotations({ status: 409 })) {}
// 429, 5xx
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", fields, HttpApiSchema.annotations({ status: 429 })) {}
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", fields, HttpApiSchema.annotations({ status: 500 })) {}
export class WalletProviderUnavailable extends Schema.TaggedError<WalletProviderUnavailable>()("WalletProviderUnavailable", fields, HttpApiSchema.annotations({ status: 502 })) {}
export class FeedNotReady extends Schema.TaggedError<FeedNotReady>()("FeedNotReady", fields, HttpApiSchema.annotations({ status: 503 })) {}

/** Wire schemas for `addError`, one per spec code. */
export const Wire = {
  InvalidQuery: wire(InvalidQuery, "InvalidQuery", "MERCHANT_INVALID_QUERY", 400),
  InvalidItemId: wire(InvalidItemId, "InvalidItemId", "MERCHANT_INVALID_ITEM_ID", 400),
  InvalidMaxPrice: wire(InvalidMaxPrice, "InvalidMaxPrice", "MERCHANT_INVALID_MAX_PRICE", 400),
  InvalidCustomId: wire(InvalidCustomId, "InvalidCustomId", "MERCHANT_INVALID_CUSTOM_ID", 400),
  InvalidSteamId: wire(InvalidSteamId, "InvalidSteamId", "MERCHANT_INVALID_STEAM_ID", 400),
  SteamIdMismatch: wire(SteamIdMismatch, "SteamIdMismatch", "MERCHANT_STEAM_ID_MISMATCH", 400),
  InvalidTradeUrl: wire(InvalidTradeUrl, "InvalidTradeUrl", "MERCHANT_INVALID_TRADE_URL", 400),
  InvalidMarketHashName: wire(InvalidMarketHashName, "InvalidMarketHashName", "MERCHANT_INVALID_MARKET_HASH_NAME", 400),
  InvalidEstimatedTime: wire(InvalidEstimatedTime, "InvalidEstimatedTime", "MERCHANT_INVALID_ESTIMATED_TIME", 400),
  NoItemsFound: wire(NoItemsFound, "NoItemsFound", "MERCHANT_NO_ITEMS_FOUND", 400),
  InvalidStatus: wire(InvalidStatus, "InvalidStatus", "MERCHANT_INVALID_STATUS", 400),
  InvalidSort: wire(InvalidSort, "InvalidSort", "MERCHANT_INVALID_SORT", 400),
  WalletNetworkInvalid: wire(WalletNetworkInvalid, "WalletNetworkInvalid", "MERCHANT_WALLET_NETWORK_INVALID", 400),
  ApiKeyMissing: wire(ApiKeyMissing, "ApiKeyMissing", "MERCHANT_API_KEY_MISSING", 401),
  InsufficientBalance: wire(InsufficientBalance, "InsufficientBalance", "MERCHANT_INSUFFICIENT_BALANCE", 402),
  MerchantBlocked: wire(MerchantBlocked, "MerchantBlocked", "MERCHANT_BLOCKED", 403),
  MerchantNotActive: wire(MerchantNotActive, "MerchantNotActive", "MERCHANT_NOT_ACTIVE", 403),
  ItemNotFound: wire(ItemNotFound, "ItemNotFound", "MERCHANT_ITEM_NOT_FOUND", 404),
  PurchaseNotFound: wire(PurchaseNotFound, "PurchaseNotFound", "MERCHANT_PURCHASE_NOT_FOUND", 404),
  WalletNotFound: wire(WalletNotFound, "WalletNotFound", "MERCHANT_WALLET_NOT_FOUND", 404),
  DuplicateCustomId: wire(DuplicateCustomId, "DuplicateCustomId", "MERCHANT_DUPLICATE_CUSTOM_ID", 409),
  ItemUnavailable: wire(ItemUnavailable, "ItemUnavailable", "MERCHANT_ITEM_UNAVAILABLE", 409),
  PriceChanged: wire(PriceChanged, "PriceChanged", "MERCHANT_PRICE_CHANGED", 409),
  PurchaseFailed: wire(PurchaseFailed, "PurchaseFailed", "MERCHANT_PURCHASE_FAILED", 409),
  Conflict: wire(Conflict, "Conflict", "MERCHANT_CONFLICT", 409),
  WalletIssuanceDisabled: wire(WalletIssuanceDisabled, "WalletIssuanceDisabled", "MERCHANT_WALLET_ISSUANCE_DISABLED", 409),
  WalletCreationNotStarted: wire(WalletCreationNotStarted, "WalletCreationNotStarted", "WALLET_CREATION_NOT_STARTED", 409),
  RateLimited: wire(RateLimited, "RateLimited", "MERCHANT_RATE_LIMITED", 429),
  InternalError: wire(InternalError, "InternalError", "MERCHANT_INTERNAL_ERROR", 500),
  WalletProviderUnavailable: wire(WalletProviderUnavailable, "WalletProviderUnavailable", "MERCHANT_WALLET_PROVIDER_UNAVAILABLE", 502),
  FeedNotReady: wire(FeedNotReady, "FeedNotReady", "FEED_NOT_READY", 503)
} as const

export type ApiError = Schema.Schema.Type<(typeof Wire)[keyof typeof Wire]>

/** Validation messages quote the value they refuse: a long one is cut, so that an error is never larger than its request. */
export const MESSAGE_MAX_CHARS = 300
export const boundedMessage = (message: string): string =>
  message.length <= MESSAGE_MAX_CHARS ? message : `${message.slice(0, MESSAGE_MAX_CHARS)}… (cut from ${message.length} characters)`

/** The spec's Error body as bytes, for routes outside HttpApi (dump, stream, framework errors). */
export const errorBody = (code: string, message: string): string => JSON.stringify({ error: { code, message } })

/** Renders any API error as its HTTP response, with the spec's body. */
export const errorResponse = (error: ApiError, headers?: Record<string, string>) => {
  const entry = registry.get(error._tag) ?? { code: "MERCHANT_INTERNAL_ERROR", status: 500 }
  return HttpServerResponse.text(errorBody(entry.code, error.message), {
    status: entry.status,
    contentType: "application/json",
    ...(headers ? { headers } : {})
  })
}

/** The spec code of an error (tests and logs). */
export const codeOf = (error: ApiError): string => registry.get(error._tag)?.code ?? "MERCHANT_INTERNAL_ERROR"
