/**
 * The statements of a buy (spec 4.3, 4.4), shared by both of the buy engine's drivers
 * (BuyEngine.ts): the idempotency record, the item's lock and the buy statement, which debits the
 * actual price with its ledger row, writes the purchase leased to this process's worker, its
 * `purchase.created` event, and reserves the item, in one statement. Their texts and parameters
 * are `compile`d for the pipelined driver and the benches' bare baseline, and run through
 * SqlClient by the other driver: one text either way.
 *
 * The buy statement writes tables of four features, and its whole text is here, each piece named
 * by the feature whose table it writes: a buy is one round trip, so its pieces cannot be statements
 * of their features' repositories. What those features keep: the ledger's other changes
 * (Ledger/Repo.ts), the outbox's bodies (Webhooks/Outbox.ts prepares this one's), the logging of
 * the reservation after the commit (Catalogue/ChangeLogRepo.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, type ParseResult, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { CatalogItem } from "../Domain/CatalogItem.js"
import { Int8 } from "../Domain/Db.js"
import { InsufficientBalance, ItemNotFound, ItemUnavailable, PriceChanged } from "../Domain/Errors.js"
import { compareCents } from "../Domain/Money.js"
import { BalanceCache } from "../Ledger/BalanceCache.js"
import { type EventWithBalanceAfter, Outbox } from "../Webhooks/Outbox.js"
import { LEASE_SECONDS, PurchaseHandover } from "./Handover.js"
import { decodeRows, purchaseColumns, purchaseEventData, type PurchaseRow } from "./Rows.js"

export interface Recipient {
  readonly tradeUrl: string
  readonly steamId: string
}

/** A buy by id (/buy, /buy-sync): its idempotency record is taken in the buy's transaction. */
export interface BuyByIdRequest {
  readonly merchantId: string
  readonly itemId: string
  readonly maxPrice: number
  readonly customId: string
  readonly recipient: Recipient
}

/** One purchase of a live item: a buy by id (attempt 1) or one attempt of a by-name cycle. */
export interface BuyItemInput extends BuyByIdRequest {
  readonly attempt: number
}

/**
 * The fields of an item's JSON that its purchase keeps (PurchaseRow). Only these are decoded: the
 * whole CatalogItem (stickers and all) cost a buy about as much CPU as the rest of its decoding,
 * and the item was checked against it when it was written.
 */
const PurchasedItem = CatalogItem.pick("market_hash_name", "image_url", "exterior", "float", "delivery_type", "estimated_delivery_minutes")

export const LockedItem = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  priceCents: Int8,
  providerPriceCents: Schema.NullOr(Int8),
  item: Schema.parseJson(PurchasedItem),
  sim: Schema.NullOr(Schema.String)
})
export type LockedItem = typeof LockedItem.Type

/**
 * What the buy statement returns beside the purchase row. `dueNow`: whether the purchase is due
 * for its first step, as the database sees it (a trigger may have scheduled it later: the
 * benches' deferred worker, a test's legacy purchase); only then is it handed over.
 */
const BuyResult = Schema.Struct({ balanceAfterCents: Int8, reserved: Schema.Boolean, dueNow: Schema.Boolean })

// Decoders built once: a schema built per call is compiled again on every call.
// Eithers, so that they serve the pipelined driver's promises and, as Effects, the SqlClient driver alike.
export const decodeLockedItems = Schema.decodeUnknownEither(Schema.Array(LockedItem))
const decodeBuyResult = Schema.decodeUnknownEither(BuyResult)

/** A purchase just bought: the balance after its debit, and whether it is due for its first step. */
export interface Bought {
  readonly purchase: PurchaseRow
  readonly balanceCents: number
  readonly dueNow: boolean
}

/** Why the locked item cannot be bought at max_price (spec 4.3), or undefined when it can. */
export const itemRefusal = (row: LockedItem | undefined, input: { readonly itemId: string; readonly maxPrice: number }) =>
  row === undefined ?
    new ItemNotFound({ message: `No catalogue item ${input.itemId}.` })
    : row.status !== "active" ?
    new ItemUnavailable({ message: "The item is no longer available (sold, reserved or removed)." })
    : compareCents(row.priceCents, input.maxPrice) > 0
    ? new PriceChanged({ message: `The live price ${(row.priceCents / 100).toFixed(2)} is above max_price.` })
    : undefined

/**
 * What the buy statement's rows say: the purchase, the balance after and whether the purchase is
 * due for its first step, or why nothing was bought (its changes are then to be rolled back). The
 * item row was locked and active, so it was reserved unless its reservation found otherwise.
 */
export const boughtOf = (
  rows: ReadonlyArray<unknown>,
  item: LockedItem
): Either.Either<Bought, InsufficientBalance | ItemUnavailable | ParseResult.ParseError> =>
  rows.length === 0
    ? Either.left(new InsufficientBalance({ message: `Available balance is below the live price ${(item.priceCents / 100).toFixed(2)}.` }))
    : Either.flatMap(decodeBuyResult(rows[0]), (result) =>
      !result.reserved
        ? Either.left<ItemUnavailable | ParseResult.ParseError>(
          new ItemUnavailable({ message: "The item is no longer available (sold, reserved or removed)." })
        )
        : Either.map(decodeRows(rows), (purchases) => ({ purchase: purchases[0]!, balanceCents: result.balanceAfterCents, dueNow: result.dueNow })))

/** Orders texts by code unit, the same in every process (the lock order of batches). */
export const compareText = (a: string, b: string) => a < b ? -1 : a > b ? 1 : 0

export class BuyStatements extends Effect.Service<BuyStatements>()("BuyStatements", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const balances = yield* BalanceCache
    const outbox = yield* Outbox
    const handover = yield* PurchaseHandover

    /** The idempotency record of a buy-by-id; no row back when the custom_id is taken (spec 4.4). */
    const insertRequest = (input: BuyByIdRequest) =>
      sql`INSERT INTO purchase_requests (merchant_id, custom_id, kind, item_id, target_trade_url, target_steam_id)
          VALUES (${input.merchantId}, ${input.customId}, 'by_id', ${input.itemId}, ${input.recipient.tradeUrl}, ${input.recipient.steamId})
          ON CONFLICT (merchant_id, custom_id) DO NOTHING RETURNING custom_id`

    /** Items locked in the order of their ids (as every batch locks them: two batches never deadlock on items). */
    const lockItems = (itemIds: ReadonlyArray<string>) =>
      sql`SELECT id, status, price_cents AS "priceCents", provider_price_cents AS "providerPriceCents", item, sim
          FROM catalogue_items WHERE id IN ${sql.in(itemIds)} ORDER BY id FOR UPDATE`

    /** Takes back the idempotency record of a buy that bought nothing, in its batch's transaction. */
    const deleteRequest = (input: BuyByIdRequest) =>
      sql`DELETE FROM purchase_requests WHERE merchant_id = ${input.merchantId} AND custom_id = ${input.customId}`

    // The buy statement's pieces, each named by the feature whose tables it writes. They make one
    // statement, so that a buy is one round trip; each is done only if the CTE `debit` has a row.

    /**
     * Ledger (balances, ledger_entries): the debit of the price if available covers it (available
     * shrinks, on_hold and total_spent grow), and its ledger row. The CTE `debit` returns
     * available_cents after it; it is empty, and nothing changed, when available is below the price.
     * Announced to the Ledger's BalanceCache (PGlite) as the statement is made.
     */
    const debitSteps = (merchantId: string, cents: number, purchaseId: string) => {
      balances.changedNow(merchantId)
      return sql`
      debit AS (
        UPDATE balances SET available_cents = available_cents - ${cents}, on_hold_cents = on_hold_cents + ${cents},
               total_spent_cents = total_spent_cents + ${cents}, updated_at = now()
        WHERE merchant_id = ${merchantId} AND available_cents >= ${cents} RETURNING available_cents),
      debit_entry AS (
        INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
        SELECT ${merchantId}, 'purchase_debit', ${-cents}, available_cents, ${purchaseId} FROM debit)`
    }

    /** Purchases (purchases): the purchase, leased to this process's worker; the CTE `inserted`. */
    const purchaseStep = (input: BuyItemInput, row: LockedItem, purchaseId: string) => {
      const item = row.item
      return sql`
      inserted AS (
        INSERT INTO purchases (id, merchant_id, custom_id, attempt, item_id, market_hash_name, image_url, exterior, float,
          delivery_type, estimated_delivery_minutes, price_cents, provider_price_cents, sim, target_trade_url, target_steam_id,
          provider_request_id, lease_owner, lease_until)
        SELECT ${purchaseId}, ${input.merchantId}, ${input.customId}, ${input.attempt}, ${input.itemId}, ${item.market_hash_name},
          ${item.image_url}, ${item.exterior}, ${item.float}, ${item.delivery_type}, ${item.estimated_delivery_minutes},
          ${row.priceCents}, ${row.providerPriceCents}, ${row.sim}, ${input.recipient.tradeUrl}, ${input.recipient.steamId},
          ${randomUUID()}, ${handover.owner}, now() + make_interval(secs => ${LEASE_SECONDS})
        FROM debit
        RETURNING ${purchaseColumns(sql)}, next_step_at <= now() AS "dueNow")`
    }

    /**
     * Webhooks (webhook_events): the outbox row of `purchase.created`, its body prepared by
     * Outbox.ts but for balance_after, the debit's available_cents written as JSON.stringify writes
     * cents / 100 (no trailing zeros, no exponent).
     */
    const eventStep = (event: EventWithBalanceAfter) =>
      sql`
      event AS (
        INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at, next_attempt_at)
        SELECT ${event.id}, ${event.merchantId}, ${event.type}, ${event.orderId},
          ${event.head} || trim_scale(available_cents::numeric / 100)::text || ${event.tail}, ${event.createdAt},
          ${event.dueAt}
        FROM debit)`

    /**
     * Catalogue (catalogue_items, catalogue_reservations): the item taken out of the live
     * catalogue; the CTE `reserved` is the item if it was active. Its removal is not logged here but
     * queued, so the buy takes no lock that other merchants' buys wait for; the catalogue logs it
     * after the commit (ChangeLog.logReservations).
     */
    const reservationSteps = (itemId: string) =>
      sql`
      reserved AS (
        UPDATE catalogue_items SET status = 'reserved', updated_at = now()
        WHERE id = ${itemId} AND status = 'active' AND EXISTS (SELECT 1 FROM debit) RETURNING id),
      queued AS (
        INSERT INTO catalogue_reservations (item_id) SELECT id FROM reserved)`

    /**
     * The debit and its ledger row, the purchase, `purchase.created` and the reservation, as one
     * statement. So the merchant's balance row, which orders the merchant's buys, is held for this
     * round trip and the commit only (no other buy waits for it). When `undoRequestUnlessBought`
     * (the pipelined driver, whose transaction commits the buys that succeeded), a statement that
     * buys nothing also deletes its idempotency record, so that it leaves nothing behind; and one
     * that debited without reserving raises an error, which rolls the batch back (its items are
     * locked and distinct, so it cannot happen).
     */
    const buyStatement = (input: BuyItemInput, row: LockedItem, undoRequestUnlessBought = false) => {
      const purchaseId = randomUUID()
      const created = outbox.withBalanceAfter({
        merchantId: input.merchantId,
        type: "purchase.created",
        orderId: purchaseId,
        data: purchaseEventData({
          id: purchaseId,
          customId: input.customId,
          status: "created",
          marketHashName: row.item.market_hash_name,
          priceCents: row.priceCents,
          targetSteamId: input.recipient.steamId,
          tradeOfferId: null,
          tradeOfferUrl: null,
          failureCode: null,
          failureMessage: null,
          refundedCents: null
        })
      })
      return sql`
        WITH ${debitSteps(input.merchantId, row.priceCents, purchaseId)},
        ${purchaseStep(input, row, purchaseId)},
        ${eventStep(created)},
        ${reservationSteps(input.itemId)},
        bought AS (
          SELECT inserted.*, debit.available_cents AS "balanceAfterCents", EXISTS (SELECT 1 FROM reserved) AS reserved
          FROM inserted, debit)
        ${
        undoRequestUnlessBought
          ? sql`, undone AS (
                  DELETE FROM purchase_requests WHERE merchant_id = ${input.merchantId} AND custom_id = ${input.customId}
                  AND NOT EXISTS (SELECT 1 FROM debit))
                SELECT * FROM bought WHERE assert_true(reserved, 'debited without reserving')`
          : sql`SELECT * FROM bought`
      }`
    }

    /**
     * Buys one live item in the current transaction: lock, checks, then the buy statement. Shared by
     * buy-by-id and each by-name attempt.
     */
    const buyItem = (input: BuyItemInput) =>
      Effect.gen(function*() {
        const row = (yield* lockItems([input.itemId]).pipe(Effect.flatMap(decodeLockedItems)))[0]
        const refusal = itemRefusal(row, input)
        if (refusal !== undefined) return yield* refusal
        return yield* boughtOf(yield* buyStatement(input, row!), row!)
      })

    return { insertRequest, lockItems, deleteRequest, buyStatement, buyItem } as const
  }),
  dependencies: [BalanceCache.Default, Outbox.Default, PurchaseHandover.Default]
}) {}
