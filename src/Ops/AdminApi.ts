/**
 * The admin API of the ops listener (CONTRACT 2) as a contract: every route under
 * `Authorization: Bearer <ADMIN_TOKEN>`, its bodies, answers and ADMIN_* errors in the spec's Error
 * shape. The ops listener serves it (Ops/Server.ts) with its own OpenAPI document, and the CLI is
 * its client (Cli/Admin.ts). Handlers are in the features: Ops/Admin.ts, Deposits/Admin.ts,
 * Webhooks/Admin.ts.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { completeAdminDocument } from "../ApiDocument.js"
import { DepositItem, DepositWallet } from "../Deposits/Api.js"
import { CatalogItemInput } from "../Domain/CatalogItem.js"
import { isCalendarDateTime } from "../Domain/Db.js"
import { fields, spec, wire } from "../Domain/Errors.js"
import { WebhookUrl } from "../Domain/HttpUrl.js"
import { MerchantStatus } from "../Domain/Merchant.js"
import { toUnits } from "../Domain/Money.js"

// ---- errors ----------------------------------------------------------------------------------------

export class AdminInvalidRequest extends Schema.TaggedError<AdminInvalidRequest>()("AdminInvalidRequest", fields, spec("ADMIN_INVALID_REQUEST", 400)) {}
export class AdminUnauthorized extends Schema.TaggedError<AdminUnauthorized>()("AdminUnauthorized", fields, spec("ADMIN_UNAUTHORIZED", 401)) {}
export class AdminNotFound extends Schema.TaggedError<AdminNotFound>()("AdminNotFound", fields, spec("ADMIN_NOT_FOUND", 404)) {}
export class AdminConflict extends Schema.TaggedError<AdminConflict>()("AdminConflict", fields, spec("ADMIN_CONFLICT", 409)) {}
export class AdminBodyTooLarge extends Schema.TaggedError<AdminBodyTooLarge>()("AdminBodyTooLarge", fields, spec("ADMIN_BODY_TOO_LARGE", 413)) {}
export class AdminInternalError extends Schema.TaggedError<AdminInternalError>()("AdminInternalError", fields, spec("INTERNAL_ERROR", 500)) {}

export const AdminWire = {
  InvalidRequest: wire(AdminInvalidRequest),
  Unauthorized: wire(AdminUnauthorized),
  NotFound: wire(AdminNotFound),
  Conflict: wire(AdminConflict),
  BodyTooLarge: wire(AdminBodyTooLarge),
  InternalError: wire(AdminInternalError)
} as const

export type AdminFailure = AdminInvalidRequest | AdminUnauthorized | AdminNotFound | AdminConflict | AdminBodyTooLarge | AdminInternalError

/** The admin token, checked before anything else of a request. */
export class AdminAuthorization extends HttpApiMiddleware.Tag<AdminAuthorization>()("AdminAuthorization", {
  failure: AdminWire.Unauthorized,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

// ---- bodies and answers ----------------------------------------------------------------------------

export const CreateMerchant = Schema.Struct({
  // a name is shown in tables, logs and the CLI: one line of printable text
  name: Schema.String.pipe(
    Schema.trimmed(),
    Schema.minLength(1),
    Schema.maxLength(100),
    Schema.filter((name) => !/\p{Cc}/u.test(name) || "name must not contain control characters (line breaks, tabs)")
  ),
  webhook_url: Schema.optionalWith(WebhookUrl, { default: () => null })
})

export const PatchMerchant = Schema.Struct({
  status: Schema.optional(MerchantStatus),
  webhook_url: Schema.optional(WebhookUrl)
})

/** How long the replaced secret still signs deliveries (X-Signature-Previous): up to a week (CONTRACT 4). */
export const RotateWebhookSecret = Schema.Struct({
  previous_valid_seconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 604_800)), { default: () => 0 })
})

export const LegacyAddresses = Schema.Struct({
  trc20: Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128))),
  bep20: Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128)))
})

export const SimulatedDeposit = Schema.Struct({
  merchant_id: Schema.UUID,
  network: Schema.Literal("tron", "bsc"),
  amount: Schema.Number.annotations({ description: "USDT sent, before the tier commission." }),
  tx_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
})

export const CatalogueItems = Schema.Struct({
  items: Schema.Array(CatalogItemInput.pipe(Schema.filter((item) => toUnits(item.price, 2) !== undefined || "price must have at most two decimals")))
})

export const RecoverWebhookEvents = Schema.Struct({
  // with its zone: an instant, whatever the server's time zone
  since: Schema.String.pipe(
    Schema.filter((s) =>
      /(Z|[+-]\d{2}:\d{2})$/.test(s) && isCalendarDateTime(s) ||
      "since must be an ISO 8601 date-time of a real date with a time zone, e.g. 2026-11-26T00:00:00Z"
    )
  )
})

export const WalletPayment = Schema.Struct({
  amount: Schema.Number.pipe(Schema.filter((n) =>
    (Number.isFinite(n) && n > 0 && n <= 1_000_000_000 && toUnits(n, 6) !== undefined) ||
    "amount must be a positive number of USDT with at most 6 decimals"
  )),
  tx_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
})
export const WalletProviderStatus = Schema.Struct({ status: Schema.Literal("active", "disabled") })
export const WalletProviderAvailability = Schema.Struct({ available: Schema.Boolean })

export const CreatedMerchant = Schema.Struct({
  merchant_id: Schema.UUID,
  name: Schema.String,
  status: MerchantStatus,
  api_key: Schema.String.annotations({ description: "Shown only here." }),
  webhook_secret: Schema.String.annotations({ description: "Shown only here." }),
  webhook_url: Schema.NullOr(Schema.String)
}).annotations({ identifier: "CreatedMerchant" })

export const MerchantView = Schema.Struct({
  merchant_id: Schema.UUID,
  name: Schema.String,
  status: MerchantStatus,
  webhook_url: Schema.NullOr(Schema.String),
  deposit_addresses: Schema.Struct({ trc20: Schema.NullOr(Schema.String), bep20: Schema.NullOr(Schema.String) }),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "AdminMerchant" })

export const MerchantListQuery = Schema.Struct({
  name: Schema.optional(Schema.String.pipe(Schema.maxLength(100))).annotations({ description: "Part of the name, in any case." }),
  after: Schema.optional(Schema.String.pipe(Schema.maxLength(100))).annotations({ description: "The next page: the last name of the page before." }),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200)))
})
export const MerchantList = Schema.Struct({
  merchants: Schema.Array(MerchantView),
  next_after: Schema.NullOr(Schema.String).annotations({ description: "Pass as `after` for the next page; null on the last." })
}).annotations({ identifier: "AdminMerchantList" })

export const AdminWallet = Schema.extend(
  DepositWallet,
  Schema.Struct({ provider_wallet_id: Schema.NullOr(Schema.String), provider_status: Schema.NullOr(Schema.String) })
).annotations({ identifier: "AdminDepositWallet" })

export const InviteIssued = Schema.Struct({
  invite_url: Schema.String.annotations({ description: "{PUBLIC_URL}/cabinet/invite#<token>: single use, voids the merchant's earlier unused invites." }),
  expires_at: Schema.String
}).annotations({ identifier: "CabinetInvite" })
export const ApiKeyIssued = Schema.Struct({ api_key: Schema.String.annotations({ description: "Shown only here." }) })
export const WebhookSecretIssued = Schema.Struct({ webhook_secret: Schema.String.annotations({ description: "Shown only here." }) })
export const MerchantWallets = Schema.Struct({ merchant_id: Schema.UUID, wallets: Schema.Array(AdminWallet) })
export const WalletPaymentSent = Schema.Struct({ wallet_id: Schema.UUID, transfer_id: Schema.String, amount: Schema.Number })
export const WalletStatusSet = Schema.Struct({ wallet_id: Schema.UUID, provider_status: WalletProviderStatus.fields.status })
export const ItemsUpserted = Schema.Struct({ upserted: Schema.Int, ids: Schema.Array(Schema.String) })
/**
 * The header of an answer that repeats an earlier one (`POST /admin/deposits` with a tx_id already
 * credited: the same deposit, nothing credited), so an operator's tool can say so.
 */
export const IDEMPOTENT_REPLAYED = "idempotent-replayed"

export const EventReplayed = Schema.Struct({ event_id: Schema.UUID, delivery_status: Schema.Literal("pending") })
export const EventsRecovered = Schema.Struct({ requeued: Schema.Int })

const IdPath = Schema.Struct({ id: Schema.String })

// ---- the groups ------------------------------------------------------------------------------------

export class AdminMerchantsApi extends HttpApiGroup.make("merchants")
  .add(HttpApiEndpoint.post("createMerchant", "/admin/merchants").setPayload(CreateMerchant).addSuccess(CreatedMerchant, { status: 201 }))
  .add(
    HttpApiEndpoint.get("listMerchants", "/admin/merchants").setUrlParams(MerchantListQuery).addSuccess(MerchantList)
      .annotate(OpenApi.Description, "Merchants by name (A to Z), optionally those whose name contains `name`; 50 a page by default.")
  )
  .add(HttpApiEndpoint.get("getMerchant", "/admin/merchants/:id").setPath(IdPath).addSuccess(MerchantView))
  .add(HttpApiEndpoint.patch("updateMerchant", "/admin/merchants/:id").setPath(IdPath).setPayload(PatchMerchant).addSuccess(MerchantView))
  .add(
    HttpApiEndpoint.post("rotateApiKey", "/admin/merchants/:id/api-key").setPath(IdPath)
      .addSuccess(ApiKeyIssued, { status: 201 })
  )
  .add(
    // the body ({"previous_valid_seconds"}) may be left out: the handler reads it (Ops/Admin.ts)
    HttpApiEndpoint.post("rotateWebhookSecret", "/admin/merchants/:id/webhook-secret").setPath(IdPath)
      .addSuccess(WebhookSecretIssued, { status: 201 })
      .annotate(OpenApi.Description, "Optional body: {\"previous_valid_seconds\": 0..604800}, how long the replaced secret still signs.")
  )
  .add(
    HttpApiEndpoint.post("inviteMerchant", "/admin/merchants/:id/invite").setPath(IdPath)
      .addSuccess(InviteIssued, { status: 201 })
      .annotate(
        OpenApi.Description,
        "An invite to the merchant cabinet (72 h). Completing it replaces the merchant's login and second factor; the API key is kept."
      )
  )
  .add(
    HttpApiEndpoint.put("setLegacyAddresses", "/admin/merchants/:id/legacy-addresses").setPath(IdPath).setPayload(LegacyAddresses)
      .addSuccess(MerchantView)
  )
  .middleware(AdminAuthorization)
  .annotate(OpenApi.Title, "Merchants")
{}

export class AdminDepositsApi extends HttpApiGroup.make("deposits")
  .add(HttpApiEndpoint.post("creditDeposit", "/admin/deposits").setPayload(SimulatedDeposit).addSuccess(DepositItem, { status: 201 }))
  .add(
    HttpApiEndpoint.get("listMerchantWallets", "/admin/merchants/:id/wallets").setPath(IdPath)
      .addSuccess(MerchantWallets)
  )
  .add(
    HttpApiEndpoint.post("payWallet", "/admin/simulator/wallets/:id/payments").setPath(IdPath).setPayload(WalletPayment)
      .addSuccess(WalletPaymentSent, { status: 202 })
  )
  .add(
    HttpApiEndpoint.post("setWalletStatus", "/admin/simulator/wallets/:id/status").setPath(IdPath).setPayload(WalletProviderStatus)
      .addSuccess(WalletStatusSet)
  )
  .add(
    HttpApiEndpoint.put("setWalletProvider", "/admin/simulator/wallet-provider").setPayload(WalletProviderAvailability)
      .addSuccess(WalletProviderAvailability)
  )
  .middleware(AdminAuthorization)
  .annotate(OpenApi.Title, "Deposits")
{}

export class AdminCatalogueApi extends HttpApiGroup.make("catalogue")
  .add(
    HttpApiEndpoint.put("upsertItems", "/admin/catalogue/items").setPayload(CatalogueItems)
      .addSuccess(ItemsUpserted)
  )
  .add(HttpApiEndpoint.del("removeItem", "/admin/catalogue/items/:id").setPath(IdPath).addSuccess(HttpApiSchema.NoContent))
  .middleware(AdminAuthorization)
  .annotate(OpenApi.Title, "Catalogue")
{}

export class AdminWebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("replayEvent", "/admin/webhook-events/:id/replay").setPath(IdPath)
      .addSuccess(EventReplayed, { status: 202 })
  )
  .add(
    HttpApiEndpoint.post("recoverEvents", "/admin/merchants/:id/webhook-events/recover").setPath(IdPath).setPayload(RecoverWebhookEvents)
      .addSuccess(EventsRecovered, { status: 202 })
  )
  .middleware(AdminAuthorization)
  .annotate(OpenApi.Title, "Webhooks")
{}

export const ADMIN_OPENAPI_PATH = "/admin/openapi.json"

export class AdminApi extends HttpApi.make("admin")
  .add(AdminMerchantsApi)
  .add(AdminDepositsApi)
  .add(AdminCatalogueApi)
  .add(AdminWebhooksApi)
  .addError(AdminWire.InvalidRequest)
  .addError(AdminWire.Unauthorized)
  .addError(AdminWire.NotFound)
  .addError(AdminWire.Conflict)
  .addError(AdminWire.BodyTooLarge)
  .addError(AdminWire.InternalError)
  .annotateContext(OpenApi.annotations({
    title: "Merchant Purchasing Service: admin API",
    version: "1.0.0",
    description: "The operator's API on the ops listener: merchants and keys, deposits, the catalogue, webhook support " +
      "procedures and the test-mode simulator's controls. Every route needs the admin bearer token.",
    transform: completeAdminDocument
  }))
{}
