/**
 * A merchant's webhook events from its side: merchants whose webhooks go to a path of the tests'
 * receiver (support/webhooks.ts), a credited deposit as the event to send, and the events as
 * GET /webhook-events lists them, waited for until delivered or failed.
 */
import { randomUUID } from "node:crypto"
import { pollUntil } from "./polling.js"
import type { Merchant } from "./purchase-requests.js"
import type { RunningServer } from "./server.js"
import type { Receiver } from "./webhooks.js"

export interface HookMerchant extends Merchant {
  readonly webhookSecret: string
  /** The receiver's path its webhooks go to ("" without a webhook URL). */
  readonly path: string
}

/** A merchant whose webhooks go to `path` on the receiver (unique per merchant), or one without a URL (null). */
export const merchantAt = async (server: RunningServer, receiver: Receiver, path: string | null): Promise<HookMerchant> => {
  const unique = path === null ? null : `${path}/${randomUUID()}`
  const m = await server.createMerchant(undefined, unique === null ? null : receiver.url(unique))
  return { id: m.id, apiKey: m.apiKey, webhookSecret: m.webhookSecret, path: unique ?? "" }
}

/** A credited deposit (one balance.deposited event); its tx_id. */
export const depositTo = async (server: RunningServer, m: Merchant, amount = 10) => {
  const txId = `tx-${randomUUID()}`
  await server.adminApi.call((client) => client.deposits.creditDeposit({ payload: { merchant_id: m.id, network: "tron", amount, tx_id: txId } }))
  return txId
}

export interface EventQuery {
  readonly status?: "pending" | "delivered" | "failed"
  readonly order_id?: string
}

/** GET /webhook-events (the first 200) through the typed client. */
export const eventsOf = async (server: RunningServer, m: Merchant, query: EventQuery = {}) =>
  (await server.merchant(m.apiKey).call((client) => client.webhooks.listWebhookEvents({ urlParams: { limit: 200, ...query } }))).events

/** Waits until the merchant's only event (or the one with `id`) is in a final state; returns it. */
export const settledEvent = (server: RunningServer, m: Merchant, id?: string) =>
  pollUntil("a settled webhook event", async () => {
    const events = await eventsOf(server, m)
    const event = id === undefined ? events[0] : events.find((e) => e.id === id)
    return event !== undefined && (event.delivery_status === "delivered" || event.delivery_status === "failed") ? event : undefined
  })

/** The merchant's only event once failed after `attempts` attempts. */
export const failedEvent = (server: RunningServer, apiKey: string, attempts = 1) =>
  pollUntil(
    "the event failed",
    async () => {
      const [event] = (await server.merchant(apiKey).call((client) => client.webhooks.listWebhookEvents({ urlParams: {} }))).events
      return event?.delivery_status === "failed" && event.delivery_attempts === attempts ? event : undefined
    },
    30_000,
    50
  )
