/** The read-only webhook audit log (spec 2.11, 4.5). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { IsoDateTime } from "../Domain/Db.js"
import { failsAs, InvalidStatus, Wire } from "../Domain/Errors.js"
import { NextCursor, PageQuery } from "../Domain/Page.js"
import { Authentication } from "../Merchants/Api.js"

export const WebhookEvent = Schema.Struct({
  id: Schema.UUID,
  event_type: Schema.String,
  order_id: Schema.NullOr(Schema.UUID),
  delivery_status: Schema.Literal("pending", "sending", "delivered", "failed"),
  delivery_attempts: Schema.Int,
  last_response_code: Schema.NullOr(Schema.Int),
  created_at: IsoDateTime,
  delivered_at: Schema.NullOr(IsoDateTime)
}).annotations({ identifier: "WebhookEvent" })

export const WebhookEventList = Schema.Struct({
  events: Schema.Array(WebhookEvent),
  next_cursor: NextCursor
}).annotations({ identifier: "WebhookEventList" })

/** The filters and paging of the webhook log (spec 4.5), here and in the cabinet. */
export const WebhookEventQuery = Schema.Struct({
  ...PageQuery,
  status: Schema.optional(Schema.Literal("pending", "delivered", "failed").annotations(failsAs(InvalidStatus))),
  order_id: Schema.optional(Schema.UUID)
})

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("listWebhookEvents", "/webhook-events")
      .setUrlParams(WebhookEventQuery)
      .addSuccess(WebhookEventList)
      .addError(Wire.InvalidQuery)
      .addError(Wire.InvalidStatus)
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Webhook events")
{}
