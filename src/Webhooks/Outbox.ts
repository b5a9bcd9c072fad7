/**
 * The outbox of webhook events (CONTRACT 4). `enqueue` must run inside the transaction of the state
 * change it reports, so an event exists exactly when its change does. The body is stored as the
 * exact bytes every attempt and replay will send. A statement that writes its events together with
 * its change (a buy, the worker's first steps) takes them prepared from here and writes the rows
 * itself (OutboxRepo.ts says where).
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { Settings } from "../Config.js"
import type { EventType } from "../Domain/EventType.js"
import { OutboxRepo } from "./OutboxRepo.js"

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

/** An event whose body ends with balance_after, which only the statement that writes it knows. */
export interface EventWithBalanceAfter extends NewEvent {
  readonly id: string
  readonly createdAt: Date
  /** When its first attempt is due. */
  readonly dueAt: Date
  /** The body before and after balance_after's amount, which the statement writes as `cents / 100`. */
  readonly head: string
  readonly tail: string
}

/** Events prepared for a statement that writes several at once, and the wait before each one's first attempt. */
export interface PreparedEvents {
  readonly rows: ReadonlyArray<NewEvent & PreparedEvent>
  readonly firstDelaySeconds: number
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
    const repo = yield* OutboxRepo
    // the retry schedule's first value: the wait before an event's first attempt
    const firstDelayMs = ((yield* Settings).webhookRetrySchedule[0] ?? 0) * 1000
    const dueAt = (createdAt: Date) => new Date(createdAt.getTime() + firstDelayMs)

    /** Writes one event; returns its event_id. Call inside the state change's transaction. */
    const enqueue = (event: NewEvent) =>
      Effect.gen(function*() {
        const { body, createdAt, id } = prepare(event)
        yield* repo.insertEvent({ id, merchantId: event.merchantId, type: event.type, orderId: event.orderId, body, createdAt, dueAt: dueAt(createdAt) })
        return id
      }).pipe(Effect.catchTag("ParseError", Effect.die))

    /**
     * An event whose data's last field is balance_after, for a statement that writes it with the
     * change whose resulting balance only that statement knows.
     */
    const withBalanceAfter = (event: NewEvent): EventWithBalanceAfter => {
      const prepared = prepare({ ...event, data: { ...event.data, balance_after: BALANCE_MARK } })
      const mark = prepared.body.lastIndexOf(JSON.stringify(BALANCE_MARK))
      return {
        ...event,
        id: prepared.id,
        createdAt: prepared.createdAt,
        dueAt: dueAt(prepared.createdAt),
        head: prepared.body.slice(0, mark),
        tail: prepared.body.slice(mark + JSON.stringify(BALANCE_MARK).length)
      }
    }

    /** Events for a statement that writes them together with the changes they report. */
    const prepareAll = (events: ReadonlyArray<NewEvent>): PreparedEvents => ({
      rows: events.map((event) => ({ ...event, ...prepare(event) })),
      firstDelaySeconds: firstDelayMs / 1000
    })

    return { enqueue, withBalanceAfter, prepareAll } as const
  }),
  dependencies: [OutboxRepo.Default]
}) {}
