/**
 * The outbox of webhook events (CONTRACT 4). `enqueue` must run inside the transaction of the state
 * change it reports, so an event exists exactly when its change does. The body is stored as the
 * exact bytes every attempt and replay will send.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { Settings } from "../Config.js"
import type { EventType } from "../Domain/EventType.js"

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
    // the retry schedule's first value: the wait before an event's first attempt
    const firstDelayMs = ((yield* Settings).webhookRetrySchedule[0] ?? 0) * 1000
    const dueAt = (createdAt: Date) => new Date(createdAt.getTime() + firstDelayMs)

    /** Writes one event; returns its event_id. Call inside the state change's transaction. */
    const enqueue = (event: NewEvent) =>
      Effect.gen(function*() {
        const { id, createdAt, body } = prepare(event)
        yield* sql`INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at, next_attempt_at)
                   VALUES (${id}, ${event.merchantId}, ${event.type}, ${event.orderId}, ${body}, ${createdAt}, ${dueAt(createdAt)})`
        return id
      })

    /**
     * Writes an event as the step `event` of the caller's statement (WITH ...), together with the
     * state change it reports (only if the statement's CTE `from` has a row: the change happened),
     * for a change whose resulting balance only that statement knows: the CTE `from`'s
     * `available_cents` becomes the data's last field, balance_after.
     */
    const stepWithBalanceAfter = (event: NewEvent, from: string) => {
      const prepared = prepare({ ...event, data: { ...event.data, balance_after: BALANCE_MARK } })
      const mark = prepared.body.lastIndexOf(JSON.stringify(BALANCE_MARK))
      const head = prepared.body.slice(0, mark)
      const tail = prepared.body.slice(mark + JSON.stringify(BALANCE_MARK).length)
      // the amount as JSON.stringify writes cents / 100: no trailing zeros, no exponent
      return sql`
        event AS (
          INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at, next_attempt_at)
          SELECT ${prepared.id}, ${event.merchantId}, ${event.type}, ${event.orderId},
            ${head} || trim_scale(available_cents::numeric / 100)::text || ${tail}, ${prepared.createdAt},
            ${dueAt(prepared.createdAt)}
          FROM ${sql(from)})`
    }

    /**
     * Writes several events as the step `events` of the caller's statement (WITH ...): each only if
     * the statement's CTE `from` has a row whose `id` is the event's order id (its change happened).
     */
    const stepsByOrder = (events: ReadonlyArray<NewEvent & { readonly orderId: string }>, from: string) => {
      const prepared = events.map(prepare)
      return sql`
        events AS (
          INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at, next_attempt_at)
          SELECT e.id, e.merchant_id, e.event_type, e.order_id, e.body, e.created_at, e.created_at + make_interval(secs => ${firstDelayMs / 1000})
          FROM unnest(${prepared.map((p) => p.id)}::uuid[], ${events.map((e) => e.merchantId)}::uuid[],
                      ${events.map((e) => e.type)}::text[], ${events.map((e) => e.orderId)}::uuid[],
                      ${prepared.map((p) => p.body)}::text[], ${prepared.map((p) => p.createdAt.toISOString())}::timestamptz[])
            AS e(id, merchant_id, event_type, order_id, body, created_at)
          WHERE e.order_id IN (SELECT id FROM ${sql(from)}))`
    }

    return { enqueue, stepWithBalanceAfter, stepsByOrder } as const
  })
}) {}
