/**
 * The upstream of a purchase: the supplier acquires the item (with provider top-ups) and the game
 * platform carries the trade offer to the buyer. Orders are idempotent by the request id we record
 * before placing them, so a resumed worker never sends a purchase upstream twice.
 */
import { Context, type Effect } from "effect"
import type { SimHints } from "../Domain/CatalogItem.js"
import type { FailureCode } from "../Domain/Purchase.js"

export interface OrderRequest {
  readonly requestId: string
  readonly purchaseId: string
  readonly itemId: string | null
  readonly priceCents: number
  readonly tradeToken: string
  readonly sim: SimHints | undefined
}

export type Reversal = "REVERTED_BY_BUYER" | "REVERTED_BY_SELLER" | "REVERT_UNKNOWN"

/** What the provider reports now about an order. */
export interface OrderStatus {
  /** Waiting on a provider top-up before it can acquire. */
  readonly waitingTopUp: boolean
  readonly acknowledged: boolean
  readonly tradeOffer: { readonly id: string; readonly url: string } | undefined
  readonly outcome:
    | { readonly _tag: "pending" }
    | { readonly _tag: "completed" }
    | { readonly _tag: "failed"; readonly code: FailureCode; readonly message: string; readonly refundable: boolean }
  /** Set once a completed trade was rolled back. */
  readonly reversal: Reversal | undefined
  /** When this status will next change (the worker sleeps until then); undefined when final. */
  readonly nextChangeAt: Date | undefined
}

/** Whether a status says no more than that the provider has the order (a new order's usual first answer). */
export const onlyTaken = (status: OrderStatus) =>
  !status.waitingTopUp && !status.acknowledged && status.tradeOffer === undefined && status.outcome._tag === "pending" &&
  status.reversal === undefined

export interface PurchaseProviderService {
  /**
   * Places the orders (placing a request id again is the same order) and reports their statuses,
   * in the order of the requests. One call for several orders: an adapter whose provider takes one
   * order per call places them concurrently.
   */
  readonly placeOrders: (requests: ReadonlyArray<OrderRequest>) => Effect.Effect<ReadonlyArray<OrderStatus>>
  readonly orderStatus: (requestId: string) => Effect.Effect<OrderStatus>
}

export class PurchaseProvider extends Context.Tag("PurchaseProvider")<PurchaseProvider, PurchaseProviderService>() {}
