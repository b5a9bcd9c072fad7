/**
 * Every expected failure of the public API: a tagged error carrying its HTTP status, with a wire
 * schema that encodes it to the spec's Error body `{"error":{"code","message"}}` (spec 2.1, 7.2).
 */
import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Schema, SchemaAST } from "effect"

/** Where an error class keeps its spec code (an annotation beside HttpApi's status). */
const ErrorCode = Symbol.for("merchant-purchasing-service/ErrorCode")

/** An error's spec code and HTTP status: the third argument of its class, the one place both are declared. */
export const spec = (code: string, status: number) => ({ [HttpApiSchema.AnnotationStatus]: status, [ErrorCode]: code })

export const fields = { message: Schema.String }

interface ApiErrorClass<Self extends { readonly _tag: string; readonly message: string }>
  extends Schema.Schema<Self, { readonly _tag: Self["_tag"]; readonly message: string }>
{
  new(args: { readonly message: string }): Self
  readonly _tag: Self["_tag"]
}

const codeAndStatus = new Map<string, { readonly code: string; readonly status: number }>()

/** The wire schema of an error class, for `addError`: the spec's envelope with its literal code. */
export const wire = <Self extends { readonly _tag: string; readonly message: string }>(cls: ApiErrorClass<Self>) => {
  const annotations = cls.ast._tag === "Transformation" ? { ...cls.ast.to.annotations, ...cls.ast.annotations } : cls.ast.annotations
  const code = annotations[ErrorCode] as string
  const status = HttpApiSchema.getStatusError(cls)
  codeAndStatus.set(cls._tag, { code, status })
  return Schema.transform(
    Schema.Struct({ error: Schema.Struct({ code: Schema.Literal(code), message: Schema.String }) }),
    cls,
    {
      strict: true,
      decode: (body) => new cls({ message: body.error.message }),
      encode: (error) => ({ error: { code, message: error.message } })
    }
  ).annotations({ ...HttpApiSchema.annotations({ status }), identifier: code, title: code })
}

// 400
export class InvalidQuery extends Schema.TaggedError<InvalidQuery>()("InvalidQuery", fields, spec("MERCHANT_INVALID_QUERY", 400)) {}
export class InvalidItemId extends Schema.TaggedError<InvalidItemId>()("InvalidItemId", fields, spec("MERCHANT_INVALID_ITEM_ID", 400)) {}
export class InvalidMaxPrice extends Schema.TaggedError<InvalidMaxPrice>()("InvalidMaxPrice", fields, spec("MERCHANT_INVALID_MAX_PRICE", 400)) {}
export class InvalidCustomId extends Schema.TaggedError<InvalidCustomId>()("InvalidCustomId", fields, spec("MERCHANT_INVALID_CUSTOM_ID", 400)) {}
export class InvalidSteamId extends Schema.TaggedError<InvalidSteamId>()("InvalidSteamId", fields, spec("MERCHANT_INVALID_STEAM_ID", 400)) {}
export class SteamIdMismatch extends Schema.TaggedError<SteamIdMismatch>()("SteamIdMismatch", fields, spec("MERCHANT_STEAM_ID_MISMATCH", 400)) {}
export class InvalidTradeUrl extends Schema.TaggedError<InvalidTradeUrl>()("InvalidTradeUrl", fields, spec("MERCHANT_INVALID_TRADE_URL", 400)) {}
export class InvalidMarketHashName
  extends Schema.TaggedError<InvalidMarketHashName>()("InvalidMarketHashName", fields, spec("MERCHANT_INVALID_MARKET_HASH_NAME", 400))
{}
export class InvalidEstimatedTime
  extends Schema.TaggedError<InvalidEstimatedTime>()("InvalidEstimatedTime", fields, spec("MERCHANT_INVALID_ESTIMATED_TIME", 400))
{}
export class NoItemsFound extends Schema.TaggedError<NoItemsFound>()("NoItemsFound", fields, spec("MERCHANT_NO_ITEMS_FOUND", 400)) {}
export class InvalidStatus extends Schema.TaggedError<InvalidStatus>()("InvalidStatus", fields, spec("MERCHANT_INVALID_STATUS", 400)) {}
export class InvalidSort extends Schema.TaggedError<InvalidSort>()("InvalidSort", fields, spec("MERCHANT_INVALID_SORT", 400)) {}
export class WalletNetworkInvalid
  extends Schema.TaggedError<WalletNetworkInvalid>()("WalletNetworkInvalid", fields, spec("MERCHANT_WALLET_NETWORK_INVALID", 400))
{}
export class CabinetInviteInvalid extends Schema.TaggedError<CabinetInviteInvalid>()("CabinetInviteInvalid", fields, spec("CABINET_INVITE_INVALID", 400)) {}
export class CabinetWeakPassword extends Schema.TaggedError<CabinetWeakPassword>()("CabinetWeakPassword", fields, spec("CABINET_WEAK_PASSWORD", 400)) {}
export class CabinetCodeInvalid extends Schema.TaggedError<CabinetCodeInvalid>()("CabinetCodeInvalid", fields, spec("CABINET_CODE_INVALID", 400)) {}
export class CabinetWebhookUrlInvalid
  extends Schema.TaggedError<CabinetWebhookUrlInvalid>()("CabinetWebhookUrlInvalid", fields, spec("CABINET_WEBHOOK_URL_INVALID", 400))
{}
// 401, 402, 403
export class CabinetLoginFailed extends Schema.TaggedError<CabinetLoginFailed>()("CabinetLoginFailed", fields, spec("CABINET_LOGIN_FAILED", 401)) {}
export class CabinetSessionRequired
  extends Schema.TaggedError<CabinetSessionRequired>()("CabinetSessionRequired", fields, spec("CABINET_SESSION_REQUIRED", 401))
{}
export class OriginNotAllowed extends Schema.TaggedError<OriginNotAllowed>()("OriginNotAllowed", fields, spec("MERCHANT_ORIGIN_NOT_ALLOWED", 403)) {}
export class ApiKeyMissing extends Schema.TaggedError<ApiKeyMissing>()("ApiKeyMissing", fields, spec("MERCHANT_API_KEY_MISSING", 401)) {}
export class InsufficientBalance extends Schema.TaggedError<InsufficientBalance>()("InsufficientBalance", fields, spec("MERCHANT_INSUFFICIENT_BALANCE", 402)) {}
export class MerchantBlocked extends Schema.TaggedError<MerchantBlocked>()("MerchantBlocked", fields, spec("MERCHANT_BLOCKED", 403)) {}
export class MerchantNotActive extends Schema.TaggedError<MerchantNotActive>()("MerchantNotActive", fields, spec("MERCHANT_NOT_ACTIVE", 403)) {}
// 404
export class ItemNotFound extends Schema.TaggedError<ItemNotFound>()("ItemNotFound", fields, spec("MERCHANT_ITEM_NOT_FOUND", 404)) {}
export class PurchaseNotFound extends Schema.TaggedError<PurchaseNotFound>()("PurchaseNotFound", fields, spec("MERCHANT_PURCHASE_NOT_FOUND", 404)) {}
export class WalletNotFound extends Schema.TaggedError<WalletNotFound>()("WalletNotFound", fields, spec("MERCHANT_WALLET_NOT_FOUND", 404)) {}
// 409
export class DuplicateCustomId extends Schema.TaggedError<DuplicateCustomId>()("DuplicateCustomId", fields, spec("MERCHANT_DUPLICATE_CUSTOM_ID", 409)) {}
export class ItemUnavailable extends Schema.TaggedError<ItemUnavailable>()("ItemUnavailable", fields, spec("MERCHANT_ITEM_UNAVAILABLE", 409)) {}
export class PriceChanged extends Schema.TaggedError<PriceChanged>()("PriceChanged", fields, spec("MERCHANT_PRICE_CHANGED", 409)) {}
export class PurchaseFailed extends Schema.TaggedError<PurchaseFailed>()("PurchaseFailed", fields, spec("MERCHANT_PURCHASE_FAILED", 409)) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields, spec("MERCHANT_CONFLICT", 409)) {}
export class WalletIssuanceDisabled
  extends Schema.TaggedError<WalletIssuanceDisabled>()("WalletIssuanceDisabled", fields, spec("MERCHANT_WALLET_ISSUANCE_DISABLED", 409))
{}
export class WalletCreationNotStarted
  extends Schema.TaggedError<WalletCreationNotStarted>()("WalletCreationNotStarted", fields, spec("WALLET_CREATION_NOT_STARTED", 409))
{}
export class CabinetLoginTaken extends Schema.TaggedError<CabinetLoginTaken>()("CabinetLoginTaken", fields, spec("CABINET_LOGIN_TAKEN", 409)) {}
// 429, 5xx
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", fields, spec("MERCHANT_RATE_LIMITED", 429)) {}
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", fields, spec("MERCHANT_INTERNAL_ERROR", 500)) {}
export class WalletProviderUnavailable
  extends Schema.TaggedError<WalletProviderUnavailable>()("WalletProviderUnavailable", fields, spec("MERCHANT_WALLET_PROVIDER_UNAVAILABLE", 502))
{}
export class FeedNotReady extends Schema.TaggedError<FeedNotReady>()("FeedNotReady", fields, spec("FEED_NOT_READY", 503)) {}

/** Wire schemas for `addError`, one per spec code. */
export const Wire = {
  InvalidQuery: wire(InvalidQuery),
  InvalidItemId: wire(InvalidItemId),
  InvalidMaxPrice: wire(InvalidMaxPrice),
  InvalidCustomId: wire(InvalidCustomId),
  InvalidSteamId: wire(InvalidSteamId),
  SteamIdMismatch: wire(SteamIdMismatch),
  InvalidTradeUrl: wire(InvalidTradeUrl),
  InvalidMarketHashName: wire(InvalidMarketHashName),
  InvalidEstimatedTime: wire(InvalidEstimatedTime),
  NoItemsFound: wire(NoItemsFound),
  InvalidStatus: wire(InvalidStatus),
  InvalidSort: wire(InvalidSort),
  WalletNetworkInvalid: wire(WalletNetworkInvalid),
  CabinetInviteInvalid: wire(CabinetInviteInvalid),
  CabinetWeakPassword: wire(CabinetWeakPassword),
  CabinetCodeInvalid: wire(CabinetCodeInvalid),
  CabinetWebhookUrlInvalid: wire(CabinetWebhookUrlInvalid),
  CabinetLoginFailed: wire(CabinetLoginFailed),
  CabinetSessionRequired: wire(CabinetSessionRequired),
  OriginNotAllowed: wire(OriginNotAllowed),
  CabinetLoginTaken: wire(CabinetLoginTaken),
  ApiKeyMissing: wire(ApiKeyMissing),
  InsufficientBalance: wire(InsufficientBalance),
  MerchantBlocked: wire(MerchantBlocked),
  MerchantNotActive: wire(MerchantNotActive),
  ItemNotFound: wire(ItemNotFound),
  PurchaseNotFound: wire(PurchaseNotFound),
  WalletNotFound: wire(WalletNotFound),
  DuplicateCustomId: wire(DuplicateCustomId),
  ItemUnavailable: wire(ItemUnavailable),
  PriceChanged: wire(PriceChanged),
  PurchaseFailed: wire(PurchaseFailed),
  Conflict: wire(Conflict),
  WalletIssuanceDisabled: wire(WalletIssuanceDisabled),
  WalletCreationNotStarted: wire(WalletCreationNotStarted),
  RateLimited: wire(RateLimited),
  InternalError: wire(InternalError),
  WalletProviderUnavailable: wire(WalletProviderUnavailable),
  FeedNotReady: wire(FeedNotReady)
} as const

export type ApiError = Schema.Schema.Type<(typeof Wire)[keyof typeof Wire]>

/** An error class, as a field names the error its decode failure answers with. */
export type ApiErrorConstructor = new(args: { readonly message: string }) => ApiError

const FieldError = Symbol.for("merchant-purchasing-service/FieldError")

/**
 * Annotation of a body, query or path field whose decode failure has its own code (spec 7.2,
 * CONTRACT 6); the other fields fail as MERCHANT_INVALID_QUERY.
 */
export const failsAs = (error: ApiErrorConstructor) => ({ [FieldError]: error })

/** The error a field's schema fails as: on the schema, or on a member of the union it is in (optional, nullable). */
export const fieldErrorOf = (ast: SchemaAST.AST): ApiErrorConstructor | undefined => {
  const own = ast.annotations[FieldError] as ApiErrorConstructor | undefined
  if (own !== undefined || ast._tag !== "Union") return own
  for (const member of ast.types) {
    const error = fieldErrorOf(member)
    if (error !== undefined) return error
  }
  return undefined
}

/** Validation messages quote the value they refuse: a long one is cut, so that an error is never larger than its request. */
export const MESSAGE_MAX_CHARS = 300
export const boundedMessage = (message: string): string =>
  message.length <= MESSAGE_MAX_CHARS ? message : `${message.slice(0, MESSAGE_MAX_CHARS)}… (cut from ${message.length} characters)`

/** A decode issue as `field.path: message` (`whole` names the value when the issue is not in a field). */
export const issueText = (issue: { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }, whole: string): string =>
  `${issue.path.length > 0 ? issue.path.join(".") : whole}: ${issue.message}`

/** The spec's Error body as bytes, for routes outside HttpApi (dump, stream, framework errors). */
export const errorBody = (code: string, message: string): string => JSON.stringify({ error: { code, message } })

/** Any API error as its status and the spec's body. */
export const errorWire = (error: ApiError): { readonly status: number; readonly body: string } => {
  const entry = codeAndStatus.get(error._tag) ?? { code: "MERCHANT_INTERNAL_ERROR", status: 500 }
  return { status: entry.status, body: errorBody(entry.code, error.message) }
}

/** Renders any API error as its HTTP response, with the spec's body. */
export const errorResponse = (error: ApiError, headers?: Record<string, string>) => {
  const { body, status } = errorWire(error)
  return HttpServerResponse.text(body, {
    status,
    contentType: "application/json",
    ...(headers ? { headers } : {})
  })
}

/** The spec code and HTTP status of an error class declared with `spec`, by its tag. */
export const declaredCodeAndStatus = (tag: string): { readonly code: string; readonly status: number } | undefined => codeAndStatus.get(tag)

/** The spec code of an error (tests and logs). */
export const codeOf = (error: ApiError): string => codeAndStatus.get(error._tag)?.code ?? "MERCHANT_INTERNAL_ERROR"
