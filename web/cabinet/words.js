// What the cabinet page says about the API's codes and statuses, in words a merchant's staff read
// without the API reference at hand. The API's own values stay the filters' values and appear
// beside these words only where support needs them (a failure's code).

/** USD with two decimals; anything else (a missing amount) as a dash, never "NaN". */
export const usd = (n) => (typeof n === "number" && Number.isFinite(n) ? `${n.toFixed(2)} USD` : "—")

/** A local date and time; a missing or unreadable one as a dash, never "Invalid Date". */
export const when = (iso) => {
  const date = iso ? new Date(iso) : undefined
  return date !== undefined && !Number.isNaN(date.getTime()) ? date.toLocaleString() : "—"
}

/** The deposit networks, by the names of the wallet list (tron, bsc) and of the balance's earlier addresses (trc20, bep20). */
export const NETWORKS = [
  { network: "tron", earlier: "trc20", title: "USDT on TRON (TRC-20)", short: "TRON (TRC-20)" },
  { network: "bsc", earlier: "bep20", title: "USDT on BNB Smart Chain (BEP-20)", short: "BNB Smart Chain (BEP-20)" }
]

export const networkName = (network) => NETWORKS.find((n) => n.network === network || n.earlier === network)?.short ?? network ?? "—"

export const accountStatus = (status) =>
  ({
    active: "account active",
    inactive: "account paused: new purchases and deposit addresses are refused until your operator turns it back on",
    blocked: "account blocked"
  })[status] ?? `account ${status}`

/** What a deposit wallet's status means for the merchant, and what to do next. */
export const walletStatus = (status) =>
  ({
    prepared: "Not requested from our wallet provider yet.",
    creation_started: "Our wallet provider is creating this address. Press “Check status” in a minute to see it.",
    requires_reconciliation: "We have not heard back from our wallet provider about this address yet. Press “Check status” to ask again.",
    bound: "Your address is ready."
  })[status] ?? "Its state is not known to this page. Press “Check status”."

/** The purchase statuses, in the order a purchase goes through them (the filter's values). */
export const PURCHASE_STATUSES = [
  ["created", "Accepted"],
  ["processing", "Buying the item"],
  ["sent_to_steam", "Trade offer sent, waiting for the buyer"],
  ["completed", "Delivered"],
  ["failed", "Failed"]
]

export const purchaseStatus = (status) => PURCHASE_STATUSES.find(([value]) => value === status)?.[1] ?? status

const FAILURE_REASONS = {
  INVENTORY_PRIVATE: "The buyer's Steam inventory is private, so the item could not be sent.",
  TRADING_UNAVAILABLE: "The buyer's Steam account cannot trade at the moment.",
  INVALID_TRADE_URL: "The buyer's trade URL is wrong or no longer valid.",
  TRADE_DECLINED: "The buyer declined the trade offer.",
  TRADE_COUNTERED: "The buyer answered the trade offer with a counteroffer.",
  TRADE_CANCELLED: "The trade offer was cancelled.",
  TRADE_EXPIRED: "The buyer did not accept the trade offer in time.",
  SELLER_CANCELLED: "The seller cancelled the sale.",
  ITEM_UNAVAILABLE: "The item was no longer available.",
  PRICE_CHANGED: "The item's price changed before it could be bought.",
  PROVIDER_ERROR: "The item could not be bought or sent because of an error at our supplier or at Steam.",
  MANUAL_REVIEW: "The outcome is not clear; our team is looking into it.",
  REVERTED_BY_BUYER: "The buyer reversed the trade after accepting it.",
  REVERTED_BY_SELLER: "The seller reversed the trade after the buyer had accepted it.",
  REVERT_UNKNOWN: "The trade was reversed after it had been accepted; our team is looking into it."
}

/** Why a purchase failed: the known reasons in our words, any other with the message that came with it. */
export const failureReason = (failure) => FAILURE_REASONS[failure.code] ?? (failure.message || "No reason was given.")

/** Whether the price came back to the balance (a positive amount is a recorded refund; 0 is none; null is none so far). */
export const refundText = (failure, price) => {
  const refunded = failure.refunded_amount
  if (typeof refunded === "number" && refunded > 0) {
    return refunded === price
      ? `Refunded in full: ${usd(refunded)} is back in your available balance.`
      : `Refunded ${usd(refunded)} of ${usd(price)}: it is back in your available balance.`
  }
  if (refunded === 0) return "Not refunded."
  return "No refund so far."
}

export const deliveryStatus = (event) =>
  ({
    pending: event.delivery_attempts > 0 ? "Not delivered yet: will be tried again" : "Waiting to be sent",
    sending: "Being sent",
    delivered: "Delivered",
    failed: "Failed: no more attempts (your operator can send it again)"
  })[event.delivery_status] ?? event.delivery_status

/** The receiver's last HTTP status; 0 is no answer at all (no connection, or nowhere to send). */
export const lastAnswer = (code) => (code === null || code === undefined ? "—" : code === 0 ? "No answer" : `HTTP ${code}`)

/**
 * What the page says for an API error a merchant meets in the cabinet: the errors written for a
 * program (they name endpoints and retry rules) in plain words; any other with its own message.
 * A refused sign-in keeps the service's one message, whichever part was wrong, and a refusal for
 * too many attempts its own (it says how long to wait).
 */
export const errorText = (code, message) =>
  ({
    MERCHANT_WALLET_PROVIDER_UNAVAILABLE:
      "We could not confirm this address with our wallet provider. Do not send funds to it yet: press “Check status” in a minute.",
    WALLET_CREATION_NOT_STARTED: "This address has not been requested from our wallet provider yet: press “Check status” first.",
    MERCHANT_NOT_ACTIVE: "Your account is paused: ask your operator to turn it back on."
  })[code] ?? message
