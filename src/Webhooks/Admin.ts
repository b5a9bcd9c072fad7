/**
 * The support procedures of webhook delivery on the admin API (spec 4.5, CONTRACT 4): replay one
 * event, or recover a merchant's failed events since a time. Both keep event ids, and bodies byte
 * for byte.
 */
import { HttpRouter } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { isCalendarDateTime } from "../Domain/Db.js"
import { Merchants } from "../Merchants/Merchants.js"
import { AdminError, body, json, notFound, pathId } from "../Ops/AdminHttp.js"
import { WebhookDeliveries } from "./Deliveries.js"

const Recover = Schema.Struct({
  // with its zone: an instant, whatever the server's time zone
  since: Schema.String.pipe(
    Schema.filter((s) =>
      /(Z|[+-]\d{2}:\d{2})$/.test(s) && isCalendarDateTime(s) ||
      "since must be an ISO 8601 date-time of a real date with a time zone, e.g. 2026-11-26T00:00:00Z"
    )
  )
})

export const WebhookAdminRoutes = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveries
  const merchants = yield* Merchants

  return HttpRouter.empty.pipe(
    HttpRouter.post(
      "/admin/webhook-events/:id/replay",
      Effect.gen(function*() {
        const id = yield* pathId
        const outcome = yield* deliveries.replay(id)
        if (outcome === "missing") return yield* notFound("webhook event")
        if (outcome === "sending") {
          return yield* new AdminError({
            status: 409,
            code: "ADMIN_CONFLICT",
            message: "the event is being delivered right now; replay it once that attempt has ended"
          })
        }
        return json({ event_id: id.toLowerCase(), delivery_status: "pending" }, 202)
      })
    ),
    HttpRouter.post(
      "/admin/merchants/:id/webhook-events/recover",
      Effect.gen(function*() {
        const id = yield* pathId
        const input = yield* body(Recover)
        const merchant = yield* merchants.get(id)
        if (Option.isNone(merchant)) return yield* notFound("merchant")
        const requeued = yield* deliveries.recover(merchant.value.id, new Date(input.since))
        return json({ requeued }, 202)
      })
    )
  )
})
