/**
 * The merchant cabinet's JSON endpoints (CONTRACT 7) under /cabinet/api: onboarding by invite,
 * sign-in and sign-out (every call needs an allowed Origin), and, with a live session, the
 * merchant's profile, balance, purchases, webhook log, API key, webhook URL and secret.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { IsoDateTime } from "../Domain/Db.js"
import { Wire } from "../Domain/Errors.js"
import { MerchantStatus } from "../Domain/Merchant.js"
import { Balance, CabinetSession } from "../Merchants/Api.js"
import { PurchaseList, PurchaseListQuery } from "../Purchases/Api.js"
import { WebhookEventList, WebhookEventQuery } from "../Webhooks/Api.js"

export const CABINET_API_PREFIX = "/cabinet/api"

/** Every sign-in, sign-out and invite call needs an allowed Origin, with or without a cookie. */
export class CabinetOrigin extends HttpApiMiddleware.Tag<CabinetOrigin>()("CabinetOrigin", {
  failure: Wire.OriginNotAllowed
}) {}

const Text = Schema.String.pipe(Schema.maxLength(1024))
const Code = Schema.String.annotations({ description: "The current 6-digit code of the authenticator app; each code works once." })

const InviteStarted = Schema.Struct({
  merchant_name: Schema.String,
  totp_secret: Schema.String.annotations({ description: "Base32; the same on every start of one invite." }),
  otpauth_uri: Schema.String.annotations({ description: "For an authenticator app (TOTP: SHA-1, 6 digits, 30 s)." })
}).annotations({ identifier: "CabinetInviteStarted" })

const SignedUp = Schema.Struct({ merchant_id: Schema.UUID, login: Schema.String }).annotations({ identifier: "CabinetSignedUp" })

export const Profile = Schema.Struct({
  merchant_id: Schema.UUID,
  name: Schema.String,
  login: Schema.NullOr(Schema.String),
  status: MerchantStatus,
  webhook_url: Schema.NullOr(Schema.String),
  api_key_last4: Schema.NullOr(Schema.String),
  api_key_created_at: Schema.NullOr(IsoDateTime)
}).annotations({ identifier: "CabinetProfile" })

export class CabinetSignInApi extends HttpApiGroup.make("cabinetSignIn")
  .add(
    HttpApiEndpoint.post("startInvite", "/invite/start")
      .setPayload(Schema.Struct({ token: Text }))
      .addSuccess(InviteStarted)
      .addError(Wire.CabinetInviteInvalid)
      .addError(Wire.InvalidQuery)
  )
  .add(
    HttpApiEndpoint.post("completeInvite", "/invite/complete")
      .setPayload(Schema.Struct({ token: Text, login: Text, password: Text, code: Text }))
      .addSuccess(SignedUp, { status: 201 })
      .addError(Wire.CabinetInviteInvalid)
      .addError(Wire.InvalidQuery)
      .addError(Wire.CabinetWeakPassword)
      .addError(Wire.CabinetCodeInvalid)
      .addError(Wire.CabinetLoginTaken)
  )
  .add(
    HttpApiEndpoint.post("login", "/login")
      .setPayload(Schema.Struct({ login: Text, password: Text, code: Text }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(Wire.InvalidQuery)
      .addError(Wire.CabinetLoginFailed)
      .addError(Wire.MerchantBlocked)
      .addError(Wire.RateLimited)
  )
  .add(HttpApiEndpoint.post("logout", "/logout").addSuccess(HttpApiSchema.NoContent))
  .middleware(CabinetOrigin)
  .prefix(CABINET_API_PREFIX)
  .annotate(OpenApi.Title, "Cabinet: sign-in")
{}

export class CabinetApi extends HttpApiGroup.make("cabinet")
  .add(HttpApiEndpoint.get("me", "/me").addSuccess(Profile))
  .add(HttpApiEndpoint.get("balance", "/balance").addSuccess(Balance))
  .add(
    HttpApiEndpoint.get("purchases", "/purchases").setUrlParams(PurchaseListQuery).addSuccess(PurchaseList)
      .addError(Wire.InvalidQuery).addError(Wire.InvalidStatus)
  )
  .add(
    HttpApiEndpoint.get("webhookEvents", "/webhook-events").setUrlParams(WebhookEventQuery).addSuccess(WebhookEventList)
      .addError(Wire.InvalidQuery).addError(Wire.InvalidStatus)
  )
  .add(
    HttpApiEndpoint.post("newApiKey", "/api-key")
      .setPayload(Schema.Struct({ code: Code }))
      .addSuccess(Schema.Struct({ api_key: Schema.String.annotations({ description: "Shown only here." }) }), { status: 201 })
      .addError(Wire.InvalidQuery)
      .addError(Wire.CabinetCodeInvalid)
  )
  .add(
    HttpApiEndpoint.put("setWebhook", "/webhook")
      .setPayload(Schema.Struct({ url: Schema.NullOr(Schema.String) }))
      .addSuccess(Profile)
      .addError(Wire.InvalidQuery)
      .addError(Wire.CabinetWebhookUrlInvalid)
  )
  .add(
    HttpApiEndpoint.post("newWebhookSecret", "/webhook-secret")
      .setPayload(Schema.Struct({
        code: Code,
        previous_valid_seconds: Schema.optional(Schema.Int.pipe(Schema.between(0, 604_800))).annotations({
          description: "How long the replaced secret still signs deliveries (X-Signature-Previous); 0 by default."
        })
      }))
      .addSuccess(Schema.Struct({ webhook_secret: Schema.String.annotations({ description: "Shown only here." }) }), { status: 201 })
      .addError(Wire.InvalidQuery)
      .addError(Wire.CabinetCodeInvalid)
  )
  .middleware(CabinetSession)
  .prefix(CABINET_API_PREFIX)
  .annotate(OpenApi.Title, "Cabinet")
{}
