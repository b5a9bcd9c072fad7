/** The webhook audit log (spec 2.11, 4.5): the outbox rows of a merchant, newest first. */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import { Int8 } from "../Domain/Db.js"

const EventRow = Schema.Struct({
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
const decodeEventRows = Schema.decodeUnknown(Schema.Array(EventRow))

/** Newest first, in the order the events were written. */
const Position = Schema.Tuple(Schema.Int)
type EventRow = typeof EventRow.Type

export const toWebhookEvent = (row: EventRow) => ({
  id: row.id,
  event_type: row.eventType,
  order_id: row.orderId,
  delivery_status: row.deliveryStatus,
  delivery_attempts: row.deliveryAttempts,
  last_response_code: row.lastResponseCode,
  created_at: row.createdAt.toISOString(),
  delivered_at: row.deliveredAt === null ? null : row.deliveredAt.toISOString()
})

export interface EventQuery {
  readonly cursor: string | undefined
  readonly limit: number
  readonly status: "pending" | "delivered" | "failed" | undefined
  readonly orderId: string | undefined
}

export class WebhookEvents extends Effect.Service<WebhookEvents>()("WebhookEvents", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** A claim whose lease has ended (its sender died) is pending again, whether or not a sender has taken it back yet. */
    const shownStatus = sql`(CASE WHEN delivery_status = 'sending' AND next_attempt_at <= now() THEN 'pending' ELSE delivery_status END)`

    const list = (merchantId: string, query: EventQuery) =>
      Effect.gen(function*() {
        const after = query.cursor === undefined ? undefined : yield* decodeCursor(Position, query.cursor)
        const rows = yield* sql`
          SELECT id, event_type AS "eventType", order_id AS "orderId", ${shownStatus} AS "deliveryStatus",
                 delivery_attempts AS "deliveryAttempts", last_response_code AS "lastResponseCode",
                 created_at AS "createdAt", delivered_at AS "deliveredAt", seq
          FROM webhook_events
          WHERE merchant_id = ${merchantId}
          ${query.status === undefined ? sql`` : sql`AND ${shownStatus} = ${query.status}`}
          ${query.orderId === undefined ? sql`` : sql`AND order_id = ${query.orderId}`}
          ${after === undefined ? sql`` : sql`AND seq < ${after[0]}`}
          ORDER BY seq DESC
          LIMIT ${query.limit + 1}`.pipe(Effect.flatMap(decodeEventRows), Effect.orDie)
        const page = rows.slice(0, query.limit)
        const last = page[page.length - 1]
        return {
          events: page.map(toWebhookEvent),
          next_cursor: rows.length > query.limit && last !== undefined ? encodeCursor([last.seq]) : null
        }
      }).pipe(Effect.withSpan("WebhookEvents.list"))

    return { list } as const
  })
}) {}
