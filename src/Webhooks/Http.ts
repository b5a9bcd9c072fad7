import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { MerchantApi } from "../Api.js"
import { CurrentMerchant } from "../Merchants/Authentication.js"
import { WebhookEvents } from "./Events.js"

export const WebhooksHttp = HttpApiBuilder.group(MerchantApi, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const events = yield* WebhookEvents
    return handlers.handle("listWebhookEvents", ({ urlParams: q }) =>
      Effect.flatMap(CurrentMerchant, (merchant) =>
        events.list(merchant.id, { cursor: q.cursor, limit: q.limit ?? 50, status: q.status, orderId: q.order_id })))
  }))
