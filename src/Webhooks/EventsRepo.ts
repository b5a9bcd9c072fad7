/** The SQL of the webhook audit log (spec 2.11, 4.5): the outbox rows of a merchant, newest first. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Int8 } from "../Domain/Db.js"

export const EventRow = Schema.Struct({
  id: Schema.String,
  eventType: Schema.String,
  orderId: Schema.NullOr(Schema.String),
  deliveryStatus: Schema.Literal("pending", "sending", "delivered", "failed"),
  deliveryAttempts: Schema.Number,
  lastResponseCode: Schema.NullOr(Schema.Number),
  createdAt: Schema.DateFromSelf,
  deliveredAt: Schema.NullOr(Schema.DateFromSelf),
  seq: Int8
})
export type EventRow = typeof EventRow.Type

const EventsRequest = Schema.Struct({
  merchantId: Schema.String,
  status: Schema.UndefinedOr(Schema.Literal("pending", "delivered", "failed")),
  orderId: Schema.UndefinedOr(Schema.String),
  /** Only events written before this one (the page's cursor). */
  beforeSeq: Schema.UndefinedOr(Schema.Number),
  limit: Schema.Number
})

export class WebhookEventsRepo extends Effect.Service<WebhookEventsRepo>()("WebhookEventsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** A claim whose lease has ended (its sender died) is pending again, whether or not a sender has taken it back yet. */
    const shownStatus = sql`(CASE WHEN delivery_status = 'sending' AND next_attempt_at <= now() THEN 'pending' ELSE delivery_status END)`

    /** Up to `limit` of the merchant's events with the status shown and the order given, newest first (in the order written). */
    const list = SqlSchema.findAll({
      Request: EventsRequest,
      Result: EventRow,
      execute: (query) =>
        sql`
          SELECT id, event_type AS "eventType", order_id AS "orderId", ${shownStatus} AS "deliveryStatus",
                 delivery_attempts AS "deliveryAttempts", last_response_code AS "lastResponseCode",
                 created_at AS "createdAt", delivered_at AS "deliveredAt", seq
          FROM webhook_events
          WHERE merchant_id = ${query.merchantId}
          ${query.status === undefined ? sql`` : sql`AND ${shownStatus} = ${query.status}`}
          ${query.orderId === undefined ? sql`` : sql`AND order_id = ${query.orderId}`}
          ${query.beforeSeq === undefined ? sql`` : sql`AND seq < ${query.beforeSeq}`}
          ORDER BY seq DESC
          LIMIT ${query.limit}`
    })

    return { list } as const
  })
}) {}
