/** The eight webhook event types (spec 6): what the outbox writes and the API reference describes. */
export type EventType =
  | "purchase.created"
  | "purchase.processing"
  | "purchase.sent_to_steam"
  | "purchase.completed"
  | "purchase.failed"
  | "purchase.refunded"
  | "purchase.reverted"
  | "balance.deposited"
