/**
 * The simulated supplier acquisition and game platform (CONTRACT 5.1, 5.2, 5.3): the trade token
 * picks the outcome like a card processor's test cards, item `sim` hints make acquisition fail (or
 * a trade that would complete be reversed by an unknown party: REVERT_UNKNOWN, which no token has),
 * and every delay is scaled by SIM_TIME_SCALE except those tied to BUY_SYNC_WAIT_SECONDS. Its
 * order book lives in the database, as a real provider's would on its side: placing the same
 * request id twice is one order, and a restarted process finds its orders where they were.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import { Settings } from "../../Config.js"
import type { FailureCode } from "../../Domain/Purchase.js"
import { type OrderRequest, type OrderStatus, PurchaseProvider, type Reversal } from "../PurchaseProvider.js"
import { prng } from "./Listings.js"
import { type NewOrder, type OrderRow, SimulatorRepo } from "./Repo.js"

type Outcome = "completed" | "failed" | "reverted"

interface Plan {
  readonly outcome: Outcome
  readonly failureCode: FailureCode | null
  /** Fails before acknowledgement (at acquisition). */
  readonly beforeAck: boolean
  readonly topUpMs: number
  readonly ackMs: number
  readonly offerMs: number
  readonly decisionMs: number
  readonly reversalMs: number | null
}

const FAILURE_MESSAGES: Record<string, string> = {
  INVENTORY_PRIVATE: "The buyer's inventory is private.",
  INVALID_TRADE_URL: "The trade URL or its token is invalid or revoked.",
  TRADE_DECLINED: "The buyer declined the trade offer.",
  TRADE_EXPIRED: "The trade offer expired.",
  ITEM_UNAVAILABLE: "The item is no longer available at the supplier.",
  PRICE_CHANGED: "The supplier's price changed.",
  MANUAL_REVIEW: "The outcome needs manual review.",
  REVERTED_BY_BUYER: "The buyer reversed the accepted trade.",
  REVERTED_BY_SELLER: "The seller reversed the accepted trade.",
  REVERT_UNKNOWN: "The trade was reversed; initiator unknown."
}
const NO_REFUND: ReadonlyArray<string> = ["MANUAL_REVIEW", "REVERTED_BY_BUYER", "REVERT_UNKNOWN"]

const plan = (request: OrderRequest, scale: number, buySyncWaitMs: number): Plan => {
  const seed = createHash("sha256").update(request.requestId).digest().readUInt32LE(0)
  const rng = prng(seed)
  const between = (lo: number, hi: number) => (lo + rng() * (hi - lo)) * scale
  const ackMs = between(1_000, 3_000)
  const offerMs = between(1_000, 2_000)
  const decisionMs = between(5_000, 20_000)
  const base = { topUpMs: 0, ackMs, offerMs, decisionMs, reversalMs: null, beforeAck: false }
  const failBeforeAck = (code: FailureCode): Plan => ({ ...base, outcome: "failed", failureCode: code, beforeAck: true })
  if (request.sim?.acquire === "unavailable") return failBeforeAck("ITEM_UNAVAILABLE")
  if (request.sim?.acquire === "price_changed") return failBeforeAck("PRICE_CHANGED")
  switch (request.tradeToken) {
    case "declined":
      return { ...base, outcome: "failed", failureCode: "TRADE_DECLINED" }
    case "expired0":
      return { ...base, outcome: "failed", failureCode: "TRADE_EXPIRED" }
    case "private0":
      return failBeforeAck("INVENTORY_PRIVATE")
    case "badtoken":
      return failBeforeAck("INVALID_TRADE_URL")
    case "slowack0":
      return { ...base, outcome: "completed", failureCode: null, ackMs: 1.5 * buySyncWaitMs }
    case "topup000":
      return { ...base, outcome: "completed", failureCode: null, topUpMs: 1.5 * buySyncWaitMs, ackMs: 0 }
    case "revbuyer":
      return { ...base, outcome: "reverted", failureCode: "REVERTED_BY_BUYER", reversalMs: 30_000 * scale }
    case "revselr0":
      return { ...base, outcome: "reverted", failureCode: "REVERTED_BY_SELLER", reversalMs: 30_000 * scale }
    case "review00":
      return { ...base, outcome: "failed", failureCode: "MANUAL_REVIEW" }
    default:
      return request.sim?.reversal === "unknown"
        ? { ...base, outcome: "reverted", failureCode: "REVERT_UNKNOWN", reversalMs: 30_000 * scale }
        : { ...base, outcome: "completed", failureCode: null }
  }
}

/** What an order reports at `now`. */
const statusAt = (order: OrderRow, now: number): OrderStatus => {
  const reached = (d: Date | null) => d !== null && d.getTime() <= now
  const decided = reached(order.decisionAt)
  const reversed = order.reversalAt !== null && reached(order.reversalAt)
  const future = [order.topupUntil, order.acknowledgedAt, order.offerAt, order.decisionAt, order.reversalAt]
    .filter((d): d is Date => d !== null && d.getTime() > now)
    .sort((a, b) => a.getTime() - b.getTime())
  const failure = order.failureCode ?? "UNKNOWN"
  return {
    waitingTopUp: order.topupUntil !== null && !reached(order.topupUntil),
    acknowledged: reached(order.acknowledgedAt),
    tradeOffer: order.tradeOfferId !== null && reached(order.offerAt)
      ? { id: order.tradeOfferId, url: `https://steamcommunity.com/tradeoffer/${order.tradeOfferId}/` }
      : undefined,
    outcome: !decided
      ? { _tag: "pending" }
      : order.outcome === "failed"
      ? { _tag: "failed", code: failure as FailureCode, message: FAILURE_MESSAGES[failure] ?? "Failed.", refundable: !NO_REFUND.includes(failure) }
      : { _tag: "completed" },
    reversal: order.outcome === "reverted" && reversed ? failure as Reversal : undefined,
    nextChangeAt: future[0]
  }
}

export const ProviderSimLive = Layer.effect(
  PurchaseProvider,
  Effect.gen(function*() {
    const repo = yield* SimulatorRepo
    const settings = yield* Settings
    const buySyncWaitMs = settings.buySyncWaitSeconds * 1000

    const orderStatus = (requestId: string) =>
      Effect.gen(function*() {
        const found = yield* repo.findOrder(requestId)
        const order = Option.getOrThrowWith(found, () => new Error(`unknown provider order ${requestId}`))
        return statusAt(order, yield* Clock.currentTimeMillis)
      }).pipe(Effect.orDie, Effect.withSpan("ProviderSim.orderStatus"))

    /** The order the simulator makes of a request placed at `now`: its plan's outcome and times. */
    const orderOf = (request: OrderRequest, now: number): NewOrder => {
      const p = plan(request, settings.simTimeScale, buySyncWaitMs)
      const at = (ms: number) => new Date(now + ms)
      const ack = p.topUpMs + p.ackMs
      const offer = ack + p.offerMs
      const decision = p.beforeAck ? p.ackMs : offer + p.decisionMs
      return {
        request_id: request.requestId,
        purchase_id: request.purchaseId,
        outcome: p.outcome,
        failure_code: p.failureCode,
        acknowledged_at: p.beforeAck ? null : at(ack),
        topup_until: p.topUpMs > 0 ? at(p.topUpMs) : null,
        offer_at: p.beforeAck ? null : at(offer),
        decision_at: at(decision),
        reversal_at: p.reversalMs === null ? null : at(decision + p.reversalMs),
        trade_offer_id: p.beforeAck
          ? null
          : String(BigInt("0x" + createHash("sha256").update(request.requestId).digest("hex").slice(0, 12)) % 10_000_000_000n + 1_000_000_000n)
      }
    }

    /**
     * Places the orders and reads them back in one statement (SimulatorRepo.placeOrders); an order
     * placed concurrently by another statement is read on its own.
     */
    const placeOrders = (requests: ReadonlyArray<OrderRequest>) =>
      Effect.gen(function*() {
        if (requests.length === 0) return []
        const now = yield* Clock.currentTimeMillis
        const rows = yield* repo.placeOrders(requests.map((request) => orderOf(request, now)))
        const byRequest = new Map(rows.map((order) => [order.requestId, order]))
        const readAt = yield* Clock.currentTimeMillis
        return yield* Effect.forEach(requests, (request) => {
          const order = byRequest.get(request.requestId)
          return order === undefined ? orderStatus(request.requestId) : Effect.succeed(statusAt(order, readAt))
        })
      }).pipe(Effect.orDie, Effect.withSpan("ProviderSim.placeOrders"))

    return { placeOrders, orderStatus }
  })
).pipe(Layer.provide(SimulatorRepo.Default))
