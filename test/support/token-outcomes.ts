/**
 * What each of the simulator's test tokens (CONTRACT 5.1) does to a purchase (spec 2.2, 3.1, 7.3):
 * the status it ends in, its failure code, the refund, whether a trade offer was sent and whether
 * the item was delivered.
 */
import { TOKENS } from "./purchase-requests.js"

export interface TokenOutcome {
  readonly token: string
  readonly status: "completed" | "failed"
  readonly code: string | null
  /** refunded_amount: the price, 0, or null. */
  readonly refund: "full" | "zero" | "null" | "none"
  /** A trade offer was sent (its id becomes known). */
  readonly offer: boolean
  /** Delivered at some point (completed_at set). */
  readonly delivered: boolean
  /** The done condition: reversals end in failed after completed. */
  readonly reversal?: boolean
}

/** Every test token, and a plain one ("abcd1234") that completes. */
export const TOKEN_OUTCOMES: ReadonlyArray<TokenOutcome> = [
  { token: "abcd1234", status: "completed", code: null, refund: "none", offer: true, delivered: true },
  { token: TOKENS.declined, status: "failed", code: "TRADE_DECLINED", refund: "full", offer: true, delivered: false },
  { token: TOKENS.expired, status: "failed", code: "TRADE_EXPIRED", refund: "full", offer: true, delivered: false },
  { token: TOKENS.private, status: "failed", code: "INVENTORY_PRIVATE", refund: "full", offer: false, delivered: false },
  { token: TOKENS.badtoken, status: "failed", code: "INVALID_TRADE_URL", refund: "full", offer: false, delivered: false },
  { token: TOKENS.slowack, status: "completed", code: null, refund: "none", offer: true, delivered: true },
  { token: TOKENS.topup, status: "completed", code: null, refund: "none", offer: true, delivered: true },
  { token: TOKENS.revbuyer, status: "failed", code: "REVERTED_BY_BUYER", refund: "zero", offer: true, delivered: true, reversal: true },
  { token: TOKENS.revseller, status: "failed", code: "REVERTED_BY_SELLER", refund: "full", offer: true, delivered: true, reversal: true },
  { token: TOKENS.review, status: "failed", code: "MANUAL_REVIEW", refund: "null", offer: true, delivered: false }
]
