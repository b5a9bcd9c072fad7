/**
 * Creating purchases (spec 4.3, 4.4): one short transaction takes the idempotency record, locks the
 * live item, checks it against max_price, debits the actual price, reserves the item (its removal
 * is queued for the change log), writes the purchase (with the request id the worker will give the
 * provider), its ledger row and the `purchase.created` event. Any failure rolls all of it back: bad
 * input changes nothing. The purchase is written leased to this process's worker, and handed over
 * to it once committed (Handover.ts); the reservation is then logged (Catalogue/Reservations.ts).
 *
 * Longer than 300 lines: the buy transaction, its batched form and the reads share their SQL
 * pieces; splitting waits for the one buy engine (issue 26), which replaces the batching here.
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Effect, Either, Option, type ParseResult, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { ChangeLog } from "../Catalogue/ChangeLog.js"
import { CatalogueReservations } from "../Catalogue/Reservations.js"
import { batches } from "../Db/Batches.js"
import { type DirectSession, DirectTransactions } from "../Db/Database.js"
import { CatalogItem } from "../Domain/CatalogItem.js"
import { CreatedAtIdPosition, decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import { Int8 } from "../Domain/Db.js"
import { Conflict, DuplicateCustomId, InsufficientBalance, ItemNotFound, ItemUnavailable, PriceChanged } from "../Domain/Errors.js"
import { compareCents } from "../Domain/Money.js"
import type { PurchaseStatus } from "../Domain/Purchase.js"
import { Ledger } from "../Ledger/Ledger.js"
import { Metrics } from "../Ops/Metrics.js"
import { Outbox } from "../Webhooks/Outbox.js"
import { LEASE_SECONDS, PurchaseHandover } from "./Handover.js"
import { PurchaseNotifications } from "./Notifications.js"
import { decodeRows, purchaseColumns, purchaseEventData, type PurchaseRow } from "./Rows.js"

export interface Recipient {
  readonly tradeUrl: string
  readonly steamId: string
}

export interface BuyByIdRequest {
  readonly merchantId: string
  readonly itemId: string
  readonly maxPrice: number
  readonly customId: string
  readonly recipient: Recipient
}

export type CreateOutcome =
  | { readonly _tag: "created"; readonly purchase: PurchaseRow; readonly balanceCents: number }
  | { readonly _tag: "existing"; readonly purchase: PurchaseRow; readonly balanceCents: number }

export type CreateError = ItemNotFound | ItemUnavailable | PriceChanged | InsufficientBalance | DuplicateCustomId | Conflict

interface BuyItemInput {
  readonly merchantId: string
  readonly itemId: string
  readonly maxPrice: number
  readonly customId: string
  readonly attempt: number
  readonly recipient: Recipient
}

const LockedItem = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  priceCents: Int8,
  providerPriceCents: Schema.NullOr(Int8),
  item: Schema.parseJson(CatalogItem),
  sim: Schema.NullOr(Schema.String)
})

type LockedItem = typeof LockedItem.Type

const RequestRow = Schema.Struct({
  kind: Schema.Literal("by_id", "by_name"),
  itemId: Schema.NullOr(Schema.String),
  targetTradeUrl: Schema.String,
  targetSteamId: Schema.String,
  cycleState: Schema.Literal("running", "done")
})
export type RequestRow = typeof RequestRow.Type

/**
 * What the buy statement returns beside the purchase row. `dueNow`: whether the purchase is due
 * for its first step, as the database sees it (a trigger may have scheduled it later: the
 * benches' deferred worker, a test's legacy purchase); only then is it handed over.
 */
const BuyResult = Schema.Struct({ balanceAfterCents: Int8, reserved: Schema.Boolean, dueNow: Schema.Boolean })

// Decoders built once: a schema built per call is compiled again on every call.
// Eithers, so that they serve the fast lane's promises and, as Effects, the Effect path alike.
const decodeLockedItems = Schema.decodeUnknownEither(Schema.Array(LockedItem))
const decodeBuyResult = Schema.decodeUnknownEither(BuyResult)
const decodeRequestRows = Schema.decodeUnknown(Schema.Array(RequestRow))

/** Why the locked item cannot be bought at max_price (spec 4.3), or undefined when it can. */
const itemRefusal = (row: LockedItem | undefined, input: { readonly itemId: string; readonly maxPrice: number }) =>
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
const boughtOf = (
  rows: ReadonlyArray<unknown>,
  item: LockedItem
): Either.Either<
  { readonly purchase: PurchaseRow; readonly balanceCents: number; readonly dueNow: boolean },
  InsufficientBalance | ItemUnavailable | ParseResult.ParseError
> =>
  rows.length === 0
    ? Either.left(new InsufficientBalance({ message: `Available balance is below the live price ${(item.priceCents / 100).toFixed(2)}.` }))
    : Either.flatMap(decodeBuyResult(rows[0]), (result) =>
      !result.reserved
        ? Either.left<ItemUnavailable | ParseResult.ParseError>(
          new ItemUnavailable({ message: "The item is no longer available (sold, reserved or removed)." })
        )
        : Either.map(decodeRows(rows), (purchases) => ({ purchase: purchases[0]!, balanceCents: result.balanceAfterCents, dueNow: result.dueNow })))

/**
 * Batches of the fast lane's buys running at once, and buys in one batch at most. Two at once: the
 * next batch's first round trip (records, item locks) overlaps the last one's second (buys,
 * COMMIT), and where they share a merchant it waits on that balance row inside PostgreSQL only.
 * At 16 clients two gave more buys a second than one, at the same p99 or better: about 2 % with 16
 * merchants and 10 % with one, once ab.mjs's bias towards its B is allowed for (9 % and 17 % as
 * measured); three gave no more than two (bench/diagnostics/ab.mjs, bench/RESULTS-archive.md).
 */
const BUY_BATCHES_IN_FLIGHT = 2
const BUY_BATCH_MAX = 32

/** Orders texts by code unit, the same in every process (the lock order of batches). */
const compareText = (a: string, b: string) => a < b ? -1 : a > b ? 1 : 0

/** Serialization failures and deadlocks are the real concurrent-update conflicts. */
const isConflict = (error: SqlError.SqlError) => {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return code === "40001" || code === "40P01"
}

export interface ListQuery {
  readonly cursor?: string | undefined
  readonly limit: number
  readonly status?: PurchaseStatus | undefined
  readonly customId?: string | undefined
  readonly targetSteamId?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
}

export class Purchases extends Effect.Service<Purchases>()("Purchases", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const changeLog = yield* ChangeLog
    const outbox = yield* Outbox
    const notifications = yield* PurchaseNotifications
    const directTransactions = yield* DirectTransactions
    const handover = yield* PurchaseHandover
    const reservations = yield* CatalogueReservations
    const metrics = yield* Metrics
    const buyTransactions = metrics.counter({
      name: "purchases_buy_transactions_total",
      help: "Transactions of the fast lane's /buy, each buying the buys that arrived while earlier ones ran"
    })
    const buysInTransactions = metrics.counter({
      name: "purchases_buy_transaction_purchases_total",
      help: "Purchases created by the fast lane's /buy transactions (over purchases_buy_transactions_total: buys per commit)"
    })

    const byId = (merchantId: string, purchaseId: string) =>
      sql`SELECT ${purchaseColumns(sql)} FROM purchases WHERE id = ${purchaseId} AND merchant_id = ${merchantId}`.pipe(
        Effect.flatMap(decodeRows),
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** The latest attempt of a custom_id (by-name cycles have several). */
    const latestByCustomId = (merchantId: string, customId: string) =>
      sql`SELECT ${purchaseColumns(sql)} FROM purchases WHERE merchant_id = ${merchantId} AND custom_id = ${customId}
          ORDER BY attempt DESC LIMIT 1`.pipe(
        Effect.flatMap(decodeRows),
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    const request = (merchantId: string, customId: string) =>
      sql`SELECT kind, item_id AS "itemId", target_trade_url AS "targetTradeUrl", target_steam_id AS "targetSteamId",
                 cycle_state AS "cycleState"
          FROM purchase_requests WHERE merchant_id = ${merchantId} AND custom_id = ${customId}`.pipe(
        Effect.flatMap(decodeRequestRows),
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    const availableCents = (merchantId: string) =>
      ledger.balance(merchantId).pipe(Effect.map(Option.match({ onNone: () => 0, onSome: (b) => b.available })), Effect.orDie)

    /** The idempotency record of a buy-by-id; no row back when the custom_id is taken (spec 4.4). */
    const insertRequest = (input: BuyByIdRequest) =>
      sql`INSERT INTO purchase_requests (merchant_id, custom_id, kind, item_id, target_trade_url, target_steam_id)
          VALUES (${input.merchantId}, ${input.customId}, 'by_id', ${input.itemId}, ${input.recipient.tradeUrl}, ${input.recipient.steamId})
          ON CONFLICT (merchant_id, custom_id) DO NOTHING RETURNING custom_id`

    const lockedItemColumns = sql`id, status, price_cents AS "priceCents", provider_price_cents AS "providerPriceCents", item, sim`

    const lockItem = (itemId: string) => sql`SELECT ${lockedItemColumns} FROM catalogue_items WHERE id = ${itemId} FOR UPDATE`

    /** Several items locked in the order of their ids (as every batch locks them: two batches never deadlock on items). */
    const lockItems = (itemIds: ReadonlyArray<string>) =>
      sql`SELECT ${lockedItemColumns} FROM catalogue_items WHERE id IN ${sql.in(itemIds)} ORDER BY id FOR UPDATE`

    /** Takes back the idempotency record of a buy that bought nothing, in its batch's transaction. */
    const deleteRequest = (input: BuyByIdRequest) =>
      sql`DELETE FROM purchase_requests WHERE merchant_id = ${input.merchantId} AND custom_id = ${input.customId}`

    /**
     * The debit and its ledger row, the purchase, `purchase.created` and the reservation, as one
     * statement. So the merchant's balance row, which orders the merchant's buys, is held for this
     * round trip and the commit only (no other buy waits for it). When `undoRequestUnlessBought`
     * (the batches of the fast lane, whose transaction commits the buys that succeeded), a
     * statement that buys nothing also deletes its idempotency record, so that it leaves nothing
     * behind; and one that debited without reserving raises an error, which rolls the batch back
     * (its items are locked and distinct, so it cannot happen).
     */
    const buyStatement = (input: BuyItemInput, row: LockedItem, undoRequestUnlessBought = false) => {
      const purchaseId = randomUUID()
      const item = row.item
      const created = {
        merchantId: input.merchantId,
        type: "purchase.created" as const,
        orderId: purchaseId,
        data: purchaseEventData({
          id: purchaseId,
          customId: input.customId,
          status: "created",
          marketHashName: item.market_hash_name,
          priceCents: row.priceCents,
          targetSteamId: input.recipient.steamId,
          tradeOfferId: null,
          tradeOfferUrl: null,
          failureCode: null,
          failureMessage: null,
          refundedCents: null
        })
      }
      return sql`
        WITH ${ledger.purchaseDebitSteps(input.merchantId, row.priceCents, purchaseId)},
        inserted AS (
          INSERT INTO purchases (id, merchant_id, custom_id, attempt, item_id, market_hash_name, image_url, exterior, float,
            delivery_type, estimated_delivery_minutes, price_cents, provider_price_cents, sim, target_trade_url, target_steam_id,
            provider_request_id, lease_owner, lease_until)
          SELECT ${purchaseId}, ${input.merchantId}, ${input.customId}, ${input.attempt}, ${input.itemId}, ${item.market_hash_name},
            ${item.image_url}, ${item.exterior}, ${item.float}, ${item.delivery_type}, ${item.estimated_delivery_minutes},
            ${row.priceCents}, ${row.providerPriceCents}, ${row.sim}, ${input.recipient.tradeUrl}, ${input.recipient.steamId},
            ${randomUUID()}, ${handover.owner}, now() + make_interval(secs => ${LEASE_SECONDS})
          FROM debit
          RETURNING ${purchaseColumns(sql)}, next_step_at <= now() AS "dueNow"),
        ${outbox.stepWithBalanceAfter(created, "debit")},
        ${changeLog.reservationSteps(input.itemId, sql`EXISTS (SELECT 1 FROM debit)`)},
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
        const row = (yield* lockItem(input.itemId).pipe(Effect.flatMap(decodeLockedItems)))[0]
        const refusal = itemRefusal(row, input)
        if (refusal !== undefined) return yield* refusal
        return yield* boughtOf(yield* buyStatement(input, row!), row!)
      })

    /**
     * After a buy committed: its reservation is to be logged, and the new purchase goes to this
     * process's worker, unless it is scheduled for later (then a claim takes it when due).
     */
    const afterCommit = (bought: { readonly purchase: PurchaseRow; readonly dueNow: boolean }) => {
      reservations.announce()
      if (bought.dueNow) handover.handOver(bought.purchase)
    }

    /**
     * One by-name attempt: `buyItem` in its own transaction after `guard` (which holds the cycle's
     * record), the purchase handed over once committed.
     */
    const buyAttempt = <E>(input: BuyItemInput, guard: Effect.Effect<void, E>) =>
      sql.withTransaction(Effect.zipRight(guard, buyItem(input))).pipe(Effect.tap(afterCommit))

    /**
     * /buy on the fast lane's direct transactions (PostgreSQL only), in batches: the buys that
     * arrive while others run are bought together in one transaction (one commit, as a group
     * commit), with the same statements and checks as `createById`, in two round trips: BEGIN,
     * the idempotency records and the items' locks sent at once, then the buy statements with the
     * COMMIT (balance rows are held inside PostgreSQL only, never across a round trip). Each buy
     * acts as if the batch's buys had run one after the other; one that cannot buy (a repeated
     * custom_id, a refusal, too little balance) leaves nothing behind and is undefined, and
     * `createById` then answers it, having seen nothing change. A batch that fails is rolled back
     * whole and each of its buys is undefined.
     */
    const createByIdDirect = Option.map(directTransactions, (transaction) =>
      batches(
        (inputs: ReadonlyArray<BuyByIdRequest>) =>
          transaction((session) => buyBatch(session, inputs)).then((bought) => {
            buyTransactions.inc()
            buysInTransactions.inc(bought?.size ?? 0)
            return inputs.map((input) => bought?.get(input))
          }),
        {
          maxInFlight: BUY_BATCHES_IN_FLIGHT,
          maxBatch: BUY_BATCH_MAX,
          // one buy per item and per custom_id in a batch: the buy statements assume the item and the record are theirs alone
          compatible: (batch, input) =>
            batch.every((other) => other.itemId !== input.itemId && (other.merchantId !== input.merchantId || other.customId !== input.customId))
        }
      ))

    /** One batch's transaction: the buys it committed, by their inputs; undefined when it committed none. */
    const buyBatch = async ({ queries, queriesAndCommit }: DirectSession, inputs: ReadonlyArray<BuyByIdRequest>) => {
      // every batch takes its locks in one order (idempotency records, items, balance rows), so two never deadlock
      const requests = [...inputs].sort((a, b) => compareText(a.merchantId, b.merchantId) || compareText(a.customId, b.customId))
      const first = await queries([...requests.map((input) => insertRequest(input).compile()), lockItems(requests.map((r) => r.itemId)).compile()])
      const lockedRows = first === undefined ? undefined : Either.getOrUndefined(decodeLockedItems(first[requests.length]))
      if (first === undefined || lockedRows === undefined) return undefined
      const locked = new Map(lockedRows.map((row) => [row.id, row]))
      const toBuy: Array<{ readonly input: BuyByIdRequest; readonly row: LockedItem }> = []
      const toUndo: Array<BuyByIdRequest> = []
      requests.forEach((input, i) => {
        if (first[i]!.length === 0) return // the custom_id is taken: a repeat, or a concurrent duplicate
        const row = locked.get(input.itemId)
        if (row === undefined || itemRefusal(row, input) !== undefined) toUndo.push(input)
        else toBuy.push({ input, row })
      })
      if (toBuy.length === 0) return undefined
      toBuy.sort((a, b) => compareText(a.input.merchantId, b.input.merchantId))
      const rows = await queriesAndCommit([
        ...toUndo.map((input) => deleteRequest(input).compile()),
        ...toBuy.map(({ input, row }) => buyStatement({ ...input, attempt: 1 }, row, true).compile())
      ])
      if (rows === undefined) return undefined
      // committed: each buy's rows are its purchase, or none if it bought nothing (a decoding failure would be a defect)
      const bought = new Map<BuyByIdRequest, { readonly purchase: PurchaseRow; readonly balanceCents: number; readonly dueNow: boolean }>()
      toBuy.forEach(({ input, row }, i) => {
        const purchaseRows = rows[toUndo.length + i]!
        if (purchaseRows.length === 0) return
        const created = Either.getOrThrow(boughtOf(purchaseRows, row))
        afterCommit(created)
        bought.set(input, created)
      })
      return bought
    }

    const mapSqlErrors = <A, E, R>(effect: Effect.Effect<A, E | SqlError.SqlError, R>) =>
      Effect.catchIf(
        effect,
        (e): e is SqlError.SqlError => e instanceof SqlError.SqlError,
        (e) => isConflict(e) ? Effect.fail(new Conflict({ message: "A concurrent update conflicted; retry once with the same custom_id." })) : Effect.die(e)
      )

    /** A repeat of /buy or /buy-sync (spec 4.4 rule 2). */
    const repeatById = (input: BuyByIdRequest, saved: RequestRow) =>
      Effect.gen(function*() {
        const duplicate = new DuplicateCustomId({ message: "custom_id was used with another item, recipient, trade URL or endpoint." })
        if (
          saved.kind !== "by_id" || saved.itemId !== input.itemId || saved.targetTradeUrl !== input.recipient.tradeUrl ||
          saved.targetSteamId !== input.recipient.steamId
        ) {
          return yield* duplicate
        }
        const purchase = yield* latestByCustomId(input.merchantId, input.customId)
        if (Option.isNone(purchase) || compareCents(purchase.value.priceCents, input.maxPrice) > 0) return yield* duplicate
        return { _tag: "existing" as const, purchase: purchase.value, balanceCents: yield* availableCents(input.merchantId) }
      })

    /**
     * /buy and /buy-sync. Concurrent duplicates wait on the idempotency record's unique index and
     * then read the first one's purchase: one purchase, one debit.
     */
    const createById = (input: BuyByIdRequest): Effect.Effect<CreateOutcome, CreateError> =>
      sql.withTransaction(Effect.gen(function*() {
        const inserted = yield* insertRequest(input)
        if (inserted.length === 0) {
          const saved = yield* request(input.merchantId, input.customId)
          if (Option.isNone(saved)) return yield* new Conflict({ message: "A concurrent request with this custom_id is in progress; retry once." })
          return yield* repeatById(input, saved.value)
        }
        const created = yield* buyItem({ ...input, attempt: 1 })
        return { _tag: "created" as const, ...created }
      })).pipe(
        Effect.tap((outcome) => outcome._tag === "created" ? afterCommit(outcome) : undefined),
        Effect.catchTag("ParseError", Effect.die),
        mapSqlErrors,
        Effect.withSpan("Purchases.createById")
      )

    /** Lists a merchant's purchases, newest first (spec 4.3). */
    const list = (merchantId: string, query: ListQuery) =>
      Effect.gen(function*() {
        const after = query.cursor === undefined ? undefined : yield* decodeCursor(CreatedAtIdPosition, query.cursor)
        const rows = yield* sql`
          SELECT ${purchaseColumns(sql)} FROM purchases
          WHERE merchant_id = ${merchantId}
          ${query.status === undefined ? sql`` : sql`AND status = ${query.status}`}
          ${query.customId === undefined ? sql`` : sql`AND custom_id = ${query.customId}`}
          ${query.targetSteamId === undefined ? sql`` : sql`AND target_steam_id = ${query.targetSteamId}`}
          ${query.from === undefined ? sql`` : sql`AND date_trunc('milliseconds', created_at) >= ${query.from}`}
          ${query.to === undefined ? sql`` : sql`AND date_trunc('milliseconds', created_at) <= ${query.to}`}
          ${after === undefined ? sql`` : sql`AND (created_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)`}
          ORDER BY created_at DESC, id DESC
          LIMIT ${query.limit + 1}`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
        const page = rows.slice(0, query.limit)
        const last = page[page.length - 1]
        return {
          purchases: page,
          nextCursor: rows.length > query.limit && last !== undefined ? encodeCursor([last.position, last.id]) : null
        }
      }).pipe(Effect.withSpan("Purchases.list"))

    /**
     * Waits (at most `timeout`) until `done` holds for the purchase, woken by change notifications
     * from any process; returns the purchase as last read.
     */
    const waitFor = (merchantId: string, purchaseId: string, done: (row: PurchaseRow) => boolean, timeoutMillis: number) =>
      Effect.scoped(Effect.gen(function*() {
        const subscription = yield* notifications.subscribe
        const deadline = Date.now() + timeoutMillis
        for (;;) {
          const row = Option.getOrThrow(yield* byId(merchantId, purchaseId))
          const remaining = deadline - Date.now()
          if (done(row) || remaining <= 0) return row
          yield* subscription.take.pipe(
            Effect.repeat({ until: (id) => id === purchaseId }),
            Effect.timeoutOption(Math.min(remaining, 1_000))
          )
        }
      }))

    return { createById, createByIdDirect, buyAttempt, byId, latestByCustomId, request, availableCents, list, waitFor, mapSqlErrors } as const
  }),
  dependencies: [Ledger.Default, Outbox.Default, ChangeLog.Default, PurchaseHandover.Default, CatalogueReservations.Default, Metrics.Default]
}) {}
