import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option, Runtime } from "effect"
import { MerchantApi } from "../Api.js"
import { Settings } from "../Config.js"
import { MAX_DELIVERY_MINUTES } from "../Domain/CatalogItem.js"
import { type ApiError, InvalidMaxPrice, PurchaseNotFound, SteamIdMismatch } from "../Domain/Errors.js"
import { exactForCents, topLevelNumberText } from "../Domain/Money.js"
import { parseTradeUrl } from "../Domain/TradeUrl.js"
import { fastPost } from "../FastRoutes.js"
import { CurrentMerchant } from "../Merchants/Api.js"
import { BuyRequest, PurchaseCreated, type PurchaseListQuery, type PurchaseRejected, PurchasesApi } from "./Api.js"
import { BuyByName } from "./BuyByName.js"
import { BuyEngine } from "./BuyEngine.js"
import type { Recipient } from "./BuyStatements.js"
import { Purchases } from "./Purchases.js"
import { purchaseCreated, purchaseDetail, purchaseRejected, type PurchaseRow } from "./Rows.js"

/** The recipient from a validated trade URL; a given SteamID64 must be the derived one. */
const recipientOf = (tradeUrl: string, steamId: string | null | undefined): Either.Either<Recipient, SteamIdMismatch> => {
  const parsed = parseTradeUrl(tradeUrl)!
  return steamId !== undefined && steamId !== null && steamId !== parsed.steamId
    ? Either.left(new SteamIdMismatch({ message: "target_steam_id differs from the SteamID64 derived from the trade URL." }))
    : Either.right({ tradeUrl, steamId: parsed.steamId })
}

const json = (body: unknown, status: number) => HttpServerResponse.unsafeJson(body, { status })

/** HTTP-level code of a failed attempt seen by a repeat (spec 4.3 buy-by-name). */
const failedAttemptCode = (row: PurchaseRow): PurchaseRejected["code"] =>
  row.failureCode === "ITEM_UNAVAILABLE" ?
    "MERCHANT_ITEM_UNAVAILABLE"
    : row.failureCode === "PRICE_CHANGED" ?
    "MERCHANT_PRICE_CHANGED"
    : "MERCHANT_PURCHASE_FAILED"

/**
 * max_price as compared with prices: exactly as the client wrote it in `body` (CONTRACT 6), or
 * undefined when that is not above 0 (spec 4.3).
 */
const exactMaxPrice = (parsed: number, body: string): number | undefined => {
  const value = exactForCents(parsed, topLevelNumberText(body, "max_price"))
  return value > 0 ? value : undefined
}

const invalidMaxPrice = () => new InvalidMaxPrice({ message: "max_price: max_price must be greater than 0" })

/** The handlers' exactMaxPrice: the body's text is read again (the request keeps it). */
const maxPriceOf = (parsed: number) =>
  Effect.flatMap(
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => Effect.orElseSucceed(request.text, () => "")),
    (text) => {
      const value = exactMaxPrice(parsed, text)
      return value === undefined ? invalidMaxPrice() : Effect.succeed(value)
    }
  )

/**
 * POST /buy's fast handler: the payload decoded as the endpoint decodes it, then what the handler
 * does, in its order: max_price exactly as written, the recipient, the buy engine's buy; its
 * refusals (each declared on the endpoint) are the contract's errors, answered with its bytes.
 */
export const PurchasesFastRoutes = Effect.gen(function*() {
  const engine = yield* BuyEngine
  const run = Runtime.runPromise(yield* Effect.runtime<never>())
  return [
    fastPost(
      { group: PurchasesApi, payload: BuyRequest, success: PurchaseCreated, status: 201 },
      async (payload, merchant, text): Promise<Either.Either<typeof PurchaseCreated.Type, ApiError>> => {
        const maxPrice = exactMaxPrice(payload.max_price, text)
        if (maxPrice === undefined) return Either.left(invalidMaxPrice())
        const recipient = recipientOf(payload.target_trade_url, payload.target_steam_id)
        if (Either.isLeft(recipient)) return Either.left(recipient.left)
        const outcome = await run(
          Effect.either(engine.buy({ merchantId: merchant.id, itemId: payload.item_id, maxPrice, customId: payload.custom_id, recipient: recipient.right }))
        )
        return Either.map(outcome, (bought) => purchaseCreated(bought.purchase, bought.balanceCents))
      }
    )
  ]
})

const FAILED_MESSAGE = "The purchase was rejected; see failure. A refund is not implied: check refunded_amount."

/** GET /purchases of the current merchant (here and in the cabinet). */
export const listPurchases = (purchases: Purchases) => ({ urlParams: q }: { readonly urlParams: typeof PurchaseListQuery.Type }) =>
  Effect.gen(function*() {
    const merchant = yield* CurrentMerchant
    const page = yield* purchases.list(merchant.id, {
      cursor: q.cursor,
      limit: q.limit ?? 50,
      status: q.status,
      customId: q.custom_id,
      targetSteamId: q.target_steam_id,
      from: q.from === undefined ? undefined : new Date(q.from),
      to: q.to === undefined ? undefined : new Date(q.to)
    })
    return { purchases: page.purchases.map(purchaseDetail), next_cursor: page.nextCursor }
  })

export const PurchasesHttp = HttpApiBuilder.group(MerchantApi, "purchases", (handlers) =>
  Effect.gen(function*() {
    const purchases = yield* Purchases
    const engine = yield* BuyEngine
    const byName = yield* BuyByName
    const settings = yield* Settings

    /** /buy and /buy-sync: created (or found) in full by the buy engine; a client that goes away cancels nothing. */
    const createById = (merchantId: string, payload: typeof BuyRequest.Type) =>
      Effect.all([maxPriceOf(payload.max_price), recipientOf(payload.target_trade_url, payload.target_steam_id)]).pipe(
        Effect.flatMap(([maxPrice, recipient]) =>
          Effect.uninterruptible(engine.buy({
            merchantId,
            itemId: payload.item_id,
            maxPrice,
            customId: payload.custom_id,
            recipient
          }))
        )
      )

    return handlers
      .handle("buy", ({ payload }) =>
        Effect.gen(function*() {
          const merchant = yield* CurrentMerchant
          const outcome = yield* createById(merchant.id, payload)
          return purchaseCreated(outcome.purchase, outcome.balanceCents)
        }))
      .handle("buySync", ({ payload }) =>
        Effect.gen(function*() {
          const merchant = yield* CurrentMerchant
          const outcome = yield* createById(merchant.id, payload)
          const row = yield* purchases.waitFor(
            merchant.id,
            outcome.purchase.id,
            (r) => r.status === "failed" || r.status === "completed" || r.acknowledged || r.topupWaiting,
            settings.buySyncWaitSeconds * 1000
          )
          if (row.status === "failed") return yield* purchaseRejected(row, "MERCHANT_PURCHASE_FAILED", FAILED_MESSAGE)
          const balanceCents = outcome._tag === "created" ? outcome.balanceCents : yield* purchases.availableCents(merchant.id)
          const acknowledged = row.acknowledged || row.status === "completed"
          return json(purchaseCreated(row, balanceCents), acknowledged ? 200 : 202)
        }))
      .handle("buyByName", ({ payload }) =>
        Effect.gen(function*() {
          const merchant = yield* CurrentMerchant
          const recipient: Recipient = { tradeUrl: payload.trade_url, steamId: parseTradeUrl(payload.trade_url)!.steamId }
          const outcome = yield* byName.buy({
            merchantId: merchant.id,
            marketHashName: payload.market_hash_name,
            maxPrice: yield* maxPriceOf(payload.max_price),
            customId: payload.custom_id,
            recipient,
            // a longer wait than any item's estimate excludes nothing more (and fits the SQL integer)
            estimatedTime: payload.estimated_time == null ? null : Math.min(payload.estimated_time, MAX_DELIVERY_MINUTES)
          })
          switch (outcome._tag) {
            case "accepted":
              return json(purchaseCreated(outcome.purchase, outcome.balanceCents), 200)
            case "in_flight":
              return json(purchaseCreated(outcome.purchase, outcome.balanceCents), 202)
            case "failed_attempt":
              return yield* purchaseRejected(outcome.purchase, failedAttemptCode(outcome.purchase), FAILED_MESSAGE)
          }
        }))
      .handle("listPurchases", listPurchases(purchases))
      .handle("getPurchase", ({ path }) =>
        Effect.gen(function*() {
          const merchant = yield* CurrentMerchant
          const row = yield* purchases.byId(merchant.id, path.purchaseId)
          if (Option.isNone(row)) return yield* new PurchaseNotFound({ message: `No purchase ${path.purchaseId}.` })
          return purchaseDetail(row.value)
        }))
  }))
