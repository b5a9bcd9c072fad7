import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { MerchantApi } from "../Api.js"
import { CurrentMerchant } from "../Merchants/Api.js"
import type { WebhookEventQuery } from "./Api.js"
import { WebhookEvents } from "./Events.js"

/** GET /webhook-events of the current merchant (here and in the cabinet). */
export const listWebhookEvents = (events: WebhookEvents) => ({ urlParams: q }: { readonly urlParams: typeof WebhookEventQuery.Type }) =>
  Effect.flatMap(CurrentMerchant, (merchant) => events.list(merchant.id, { cursor: q.cursor, limit: q.limit ?? 50, status: q.status, orderId: q.order_id }))

export const WebhooksHttp = HttpApiBuilder.group(MerchantApi, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const events = yield* WebhookEvents
    return handlers.handle("listWebhookEvents", listWebhookEvents(events))
  }))
