/** The webhook audit log (spec 2.11, 4.5): the outbox rows of a merchant, newest first, a page at a time (SQL in EventsRepo.ts). */
import { Effect, Schema } from "effect"
import { decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import { type EventRow, WebhookEventsRepo } from "./EventsRepo.js"

/** Newest first, in the order the events were written. */
const Position = Schema.Tuple(Schema.Int)

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
    const repo = yield* WebhookEventsRepo

    const list = (merchantId: string, query: EventQuery) =>
      Effect.gen(function*() {
        const after = query.cursor === undefined ? undefined : yield* decodeCursor(Position, query.cursor)
        // one more than the page: whether there is a next one
        const rows = yield* repo.list({
          merchantId,
          status: query.status,
          orderId: query.orderId,
          beforeSeq: after?.[0],
          limit: query.limit + 1
        }).pipe(Effect.orDie)
        const page = rows.slice(0, query.limit)
        const last = page[page.length - 1]
        return {
          events: page.map(toWebhookEvent),
          next_cursor: rows.length > query.limit && last !== undefined ? encodeCursor([last.seq]) : null
        }
      }).pipe(Effect.withSpan("WebhookEvents.list"))

    return { list } as const
  }),
  dependencies: [WebhookEventsRepo.Default]
}) {}
