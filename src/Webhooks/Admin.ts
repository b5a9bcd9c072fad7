/**
 * The support procedures of webhook delivery on the admin API (spec 4.5, CONTRACT 4): replay one
 * event, or recover a merchant's failed events since a time. Both keep event ids, and bodies byte
 * for byte.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Merchants } from "../Merchants/Merchants.js"
import { AdminApi, AdminConflict } from "../Ops/AdminApi.js"
import { notFound } from "../Ops/AdminHttp.js"
import { WebhookDeliveries } from "./Deliveries.js"

export const AdminWebhooksHttp = HttpApiBuilder.group(AdminApi, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const deliveries = yield* WebhookDeliveries
    const merchants = yield* Merchants
    return handlers
      .handle("replayEvent", ({ path }) =>
        Effect.gen(function*() {
          const outcome = yield* deliveries.replay(path.id)
          if (outcome === "missing") return yield* notFound("webhook event")
          if (outcome === "sending") {
            return yield* new AdminConflict({ message: "the event is being delivered right now; replay it once that attempt has ended" })
          }
          return { event_id: path.id.toLowerCase(), delivery_status: "pending" as const }
        }))
      .handle("recoverEvents", ({ path, payload }) =>
        Effect.gen(function*() {
          const merchant = yield* merchants.get(path.id)
          if (Option.isNone(merchant)) return yield* notFound("merchant")
          const requeued = yield* deliveries.recover(merchant.value.id, new Date(payload.since))
          return { requeued }
        }))
  }))
