/**
 * The SQL of the outbox (Outbox.ts): an event row of webhook_events, written in the transaction of
 * the state change it reports. Statements that write their events together with their change (a
 * buy, the worker's first steps) write these rows themselves (Purchases/BuyStatements.ts,
 * Purchases/WorkerRepo.ts), from the bodies Outbox.ts prepares.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"

const EventRow = Schema.Struct({
  id: Schema.String,
  merchantId: Schema.String,
  type: Schema.String,
  orderId: Schema.NullOr(Schema.String),
  /** The exact bytes every delivery sends. */
  body: Schema.String,
  createdAt: Schema.DateFromSelf,
  /** When its first attempt is due. */
  dueAt: Schema.DateFromSelf
})

export class OutboxRepo extends Effect.Service<OutboxRepo>()("OutboxRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Writes one event row. */
    const insertEvent = SqlSchema.void({
      Request: EventRow,
      execute: ({ body, createdAt, dueAt, id, merchantId, orderId, type }) =>
        sql`INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at, next_attempt_at)
            VALUES (${id}, ${merchantId}, ${type}, ${orderId}, ${body}, ${createdAt}, ${dueAt})`
    })

    return { insertEvent } as const
  })
}) {}
