/**
 * The outbox of webhook events (CONTRACT 4). `enqueue` must run inside the transaction of the state
 * change it reports, so an event exists exactly when its change does. The body is stored as the
 * exact bytes every attempt and replay will send.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"

export const EVENT_TYPES = [
  "purchase.created",
  "purchase.processing",
  "purchase.sent_to_steam",
  "purchase.completed",
  "purchase.failed",
  "purchase.refunded",
  "purchase.reverted",
  "balance.deposited"
] as const
export type EventType = (typeof EVENT_TYPES)[number]

export interface NewEvent {
  readonly merchantId: string
  readonly type: EventType
  readonly orderId: string | null
  readonly data: Record<string, unknown>
}

/** Stands for balance_after in a body until the statement that writes it knows the amount. */
const BALANCE_MARK = "\u0000balance_after\u0000"

export interface PreparedEvent {
  readonly id: string
  readonly createdAt: Date
  /** The exact bytes every delivery sends. */
  readonly body: string
}

/**
 * An event's id, time and body, for a statement that writes it together with its state change
 * (`enqueue` writes it on its own).
 */
export const prepare = (event: NewEvent): PreparedEvent => {
  const id = randomUUID()
  const createdAt = new Date()
  // Unknown values are omitted from the payload, never sent as null (CONTRACT 4).
  const data = Object.fromEntries(Object.entries(event.data).filter(([, v]) => v !== undefined && v !== null))
  return { id, createdAt, body: JSON.stringify({ event_id: id, event_type: event.type, created_at: createdAt.toISOString(), data }) }
}

export class Outbox extends Effect.Service<Outbox>()("Outbox", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Writes one event; returns its event_id. Call inside the state change's transaction. */
    const enqueue = (event: NewEvent) =>
      Effect.gen(function*() {
        const { id, createdAt, body } = prepare(event)
        yield* sql`INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at)
                   VALUES (${id}, ${event.merchantId}, ${event.type}, ${event.orderId}, ${body}, ${createdAt})`
        return id
      })

    /**
     * Writes an event as a step of the caller's statement (WITH ...), for a state change whose
     * resulting balance only that statement knows: written only if the statement's CTE `from`
     * has a row, with its `available_cents` as the data's last field, balance_after.
     */
    const stepWithBalanceAfter = (event: NewEvent, from: string) => {
      const prepared = prepare({ ...event, data: { ...event.data, balance_after: BALANCE_MARK } })
      const mark = prepared.body.lastIndexOf(JSON.stringify(BALANCE_MARK))
      const head = prepared.body.slice(0, mark)
      const tail = prepared.body.slice(mark + JSON.stringify(BALANCE_MARK).length)
      // the amount as JSON.stringify writes cents / 100: no trailing zeros, no exponent
      return sql`
        event AS (
          INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at)
          SELECT ${prepared.id}, ${event.merchantId}, ${event.type}, ${event.orderId},
                 ${head} || trim_scale(available_cents::numeric / 100)::text || ${tail}, ${prepared.createdAt}
          FROM ${sql(from)})`
    }

    return { enqueue, stepWithBalanceAfter } as const
  })
}) {}
