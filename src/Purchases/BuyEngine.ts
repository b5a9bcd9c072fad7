/**
 * The buy engine: every purchase of a live item (/buy and /buy-sync, in the fast lane or not, and
 * each attempt of /buy-by-name) is queued here and bought by one supervised fiber that drains the
 * queue into batches, each one transaction with one commit, as a database's group commit. At most
 * BATCHES_IN_FLIGHT run at once; the buys that arrive meanwhile form the next batch, so a lone buy
 * is never delayed and a busy one is batched by itself. Buys of one item or one idempotency record
 * never share a batch: the later waits for the next one, in its order.
 *
 * Two drivers. On PostgreSQL, buys by id are bought in pipelined transactions (PipelinedBuys.ts);
 * what such a batch does not buy (a repeat, a refusal, a failed batch) and every by-name attempt
 * then runs alone, through SqlClient. On PGlite, one SqlClient transaction holds the whole batch,
 * each buy in a savepoint of its own, so a buy that fails leaves the others. Either way a buy by
 * id is decided by one rule (`createByIdIn`): the idempotency record first; a custom_id already
 * taken answers its first purchase, or is a duplicate (spec 4.4).
 *
 * The queue and its batches are in BuyBatches.ts, the statements in BuyStatements.ts, the
 * pipelined batch in PipelinedBuys.ts.
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Deferred, Effect, Exit, FiberSet, Option } from "effect"
import { CatalogueReservations } from "../Catalogue/Reservations.js"
import { type DirectTransaction, DirectTransactions } from "../Db/Database.js"
import { Conflict, DuplicateCustomId, type InsufficientBalance, type ItemNotFound, type ItemUnavailable, type PriceChanged } from "../Domain/Errors.js"
import { compareCents } from "../Domain/Money.js"
import { BalanceCache } from "../Ledger/BalanceCache.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { makeBuyBatches, type QueuedBuy } from "./BuyBatches.js"
import { type Bought, type BuyByIdRequest, type BuyItemInput, BuyStatements } from "./BuyStatements.js"
import { PurchaseHandover } from "./Handover.js"
import { pipelinedBatch } from "./PipelinedBuys.js"
import { Purchases } from "./Purchases.js"
import type { RequestRow } from "./Repo.js"
import type { PurchaseRow } from "./Rows.js"

export type CreateOutcome =
  | { readonly _tag: "created"; readonly purchase: PurchaseRow; readonly balanceCents: number; readonly dueNow: boolean }
  | { readonly _tag: "existing"; readonly purchase: PurchaseRow; readonly balanceCents: number }

type Refusal = ItemNotFound | ItemUnavailable | PriceChanged | InsufficientBalance

export type CreateError = Refusal | DuplicateCustomId | Conflict

/**
 * Batches running at once, and buys in one batch at most. Two at once: on PostgreSQL the next
 * batch's first round trip (records, item locks) overlaps the last one's second (buys, COMMIT),
 * and where they share a merchant it waits on that balance row inside PostgreSQL only. At 16
 * clients two gave more buys a second than one, at the same p99 or better; three gave no more
 * than two (A/B runs of bench/purchases, 2026-11-29).
 */
const BATCHES_IN_FLIGHT = 2

/** A span without its call site: capturing one (a stack trace) cost 1.7 % of a buy's CPU, tracer or not. */
const HOT_SPAN = { captureStackTrace: false } as const

/** Serialization failures and deadlocks are the real concurrent-update conflicts. */
const isConflict = (error: SqlError.SqlError) => {
  const cause: unknown = error.cause
  const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
  return code === "40001" || code === "40P01"
}

/** A conflict is the client's to retry (409); any other database failure is a defect (500). */
const mapSqlErrors = <A, E, R>(effect: Effect.Effect<A, E | SqlError.SqlError, R>): Effect.Effect<A, E | Conflict, R> =>
  Effect.catchAll(effect, (e): Effect.Effect<never, E | Conflict> =>
    !(e instanceof SqlError.SqlError)
      ? Effect.fail(e)
      : isConflict(e)
      ? Effect.fail(new Conflict({ message: "A concurrent update conflicted; retry once with the same custom_id." }))
      : Effect.die(e))

export class BuyEngine extends Effect.Service<BuyEngine>()("BuyEngine", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const statements = yield* BuyStatements
    const purchases = yield* Purchases
    const direct = yield* DirectTransactions
    const reservations = yield* CatalogueReservations
    const handover = yield* PurchaseHandover
    const balances = yield* BalanceCache
    const metrics = yield* Metrics
    const fibers = yield* Fibers
    const transactions = metrics.counter({
      name: "purchases_buy_transactions_total",
      help: "Transactions of the buy engine that created purchases, each buying the buys that arrived while earlier ones ran"
    })
    const boughtInTransactions = metrics.counter({
      name: "purchases_buy_transaction_purchases_total",
      help: "Purchases created by the buy engine's transactions (over purchases_buy_transactions_total: buys per commit)"
    })
    let pending = 0
    const pendingGauge = metrics.gauge({ name: "purchases_buy_engine_pending", help: "Buys queued or in a batch, not yet answered" })
    yield* metrics.onScrape(Effect.sync(() => pendingGauge.set(pending)))

    /**
     * After a buy committed: its reservation is to be logged, and the new purchase goes to this
     * process's worker, unless it is scheduled for later (then a claim takes it when due). True:
     * a purchase was created.
     */
    const afterCommit = (bought: Bought) => {
      boughtInTransactions.inc()
      reservations.announce()
      if (bought.dueNow) handover.handOver(bought.purchase)
      return true
    }

    /** A repeat of /buy or /buy-sync (spec 4.4 rule 2): the same request answers its first purchase. */
    const repeatById = (input: BuyByIdRequest, saved: RequestRow) =>
      Effect.gen(function*() {
        const duplicate = new DuplicateCustomId({ message: "custom_id was used with another item, recipient, trade URL or endpoint." })
        if (
          saved.kind !== "by_id" || saved.itemId !== input.itemId || saved.targetTradeUrl !== input.recipient.tradeUrl ||
          saved.targetSteamId !== input.recipient.steamId
        ) {
          return yield* duplicate
        }
        const purchase = yield* purchases.latestByCustomId(input.merchantId, input.customId)
        if (Option.isNone(purchase) || compareCents(purchase.value.priceCents, input.maxPrice) > 0) return yield* duplicate
        return { _tag: "existing" as const, purchase: purchase.value, balanceCents: yield* purchases.availableCents(input.merchantId) }
      })

    /**
     * A buy by id in the current transaction: the one idempotency rule. Concurrent duplicates wait
     * on the idempotency record's unique index and then read the first one's purchase: one
     * purchase, one debit.
     */
    const createByIdIn = (input: BuyByIdRequest): Effect.Effect<CreateOutcome, CreateError | SqlError.SqlError> =>
      Effect.gen(function*() {
        const inserted = yield* statements.insertRequest(input)
        if (inserted.length === 0) {
          const saved = yield* purchases.request(input.merchantId, input.customId)
          if (Option.isNone(saved)) return yield* new Conflict({ message: "A concurrent request with this custom_id is in progress; retry once." })
          return yield* repeatById(input, saved.value)
        }
        const created = yield* statements.buyItem({ ...input, attempt: 1 })
        return { _tag: "created" as const, ...created }
      }).pipe(Effect.catchTag("ParseError", Effect.die))

    /**
     * A queued buy of `work` (run in a transaction) and the Deferred its caller awaits. `after`
     * runs once its transaction committed, and says whether it created a purchase; `direct` makes
     * it a buy the pipelined driver may buy.
     */
    const queuedBuyOf = <A, E>(
      keys: { readonly merchantId: string; readonly customId: string; readonly itemId: string },
      work: Effect.Effect<A, E | SqlError.SqlError>,
      after: (a: A) => boolean,
      direct?: { readonly input: BuyByIdRequest; readonly outcome: (bought: Bought) => A }
    ) =>
      Effect.map(Deferred.make<A, E | Conflict>(), (done) => {
        let result: Exit.Exit<A, E | Conflict> | undefined
        /** Answers the caller; true if the buy created a purchase. */
        const answer = (exit: Exit.Exit<A, E | Conflict>) =>
          Effect.suspend(() => {
            const created = Exit.isSuccess(exit) && after(exit.value)
            pending--
            return Effect.as(Deferred.done(done, exit), created)
          })
        const inTransaction = mapSqlErrors<A, E, never>(sql.withTransaction(work))
        const queued: QueuedBuy = {
          ...keys,
          byId: direct === undefined ? Option.none() : Option.some({
            input: direct.input,
            bought: (bought: Bought) => Effect.asVoid(answer(Exit.succeed(direct.outcome(bought))))
          }),
          alone: Effect.flatMap(Effect.exit(inTransaction), answer).pipe(
            Effect.map((created) => {
              if (created) transactions.inc()
            })
          ),
          inBatch: Effect.map(Effect.exit(inTransaction), (exit) => {
            result = exit
          }),
          settle: (batch) =>
            Exit.isFailure(batch) ? answer(Exit.failCause(batch.cause)) : answer(result ?? Exit.die(new Error("the buy did not run in its batch"))),
          abandon: Effect.suspend(() => Deferred.isDone(done)).pipe(
            Effect.flatMap((isDone) => isDone ? Effect.void : answer(Exit.die(new Error("the buy engine stopped before this buy was answered")))),
            Effect.asVoid
          )
        }
        return [queued, done] as const
      })

    const batches = yield* makeBuyBatches
    /** A permit for each batch whose driver runs: BATCHES_IN_FLIGHT at most. */
    const inFlight = yield* Effect.makeSemaphore(BATCHES_IN_FLIGHT)

    /** PGlite (and any one buy): one SqlClient transaction, a savepoint per buy. Nothing is left. */
    const sqlClientDriver = (batch: ReadonlyArray<QueuedBuy>): Effect.Effect<ReadonlyArray<QueuedBuy>> =>
      batch.length === 1 ? Effect.as(batch[0]!.alone, []) : sql.withTransaction(Effect.forEach(batch, (queued) => queued.inBatch, { discard: true })).pipe(
        mapSqlErrors<void, never, never>,
        Effect.exit,
        Effect.flatMap((exit) => {
          // a batch rolled back after its buys ran: what they announced of their balances is undone too
          if (Exit.isFailure(exit)) { for (const queued of batch) balances.changedNow(queued.merchantId) }
          return Effect.forEach(batch, (queued) => queued.settle(exit))
        }),
        Effect.map((created) => {
          if (created.includes(true)) transactions.inc()
          return []
        })
      )

    /** PostgreSQL: the buys by id in one pipelined transaction; the rest, and what it did not buy, are left to run alone. */
    const pipelinedDriver = (transaction: DirectTransaction) => (batch: ReadonlyArray<QueuedBuy>): Effect.Effect<ReadonlyArray<QueuedBuy>> => {
      const byId = batch.filter((queued) => Option.isSome(queued.byId))
      if (byId.length === 0) return Effect.succeed(batch)
      const inputs = byId.map((queued) => Option.getOrThrow(queued.byId).input)
      return Effect.tryPromise(() => transaction((session) => pipelinedBatch(statements, session, inputs))).pipe(
        // the buys of a batch that failed (its outcome may be unknown) run alone: a committed one is then a repeat
        Effect.tapError((error) => Effect.logWarning("a batch of buys failed; its buys run alone", error.cause)),
        Effect.orElseSucceed(() => undefined),
        Effect.flatMap((bought) => {
          if (bought !== undefined && bought.size > 0) transactions.inc()
          const left = batch.filter((queued) => Option.isNone(queued.byId))
          return Effect.as(
            Effect.forEach(byId, (queued, i) => {
              const got = bought?.get(inputs[i]!)
              if (got !== undefined) return Option.getOrThrow(queued.byId).bought(got)
              left.push(queued)
              return Effect.void
            }, { discard: true }),
            left
          )
        })
      )
    }

    const driver = Option.match(direct, { onNone: () => sqlClientDriver, onSome: pipelinedDriver })

    /** A batch, then what it left, each alone; uninterruptible: a buy under way is finished, even at shutdown. */
    const runBatch = (batch: ReadonlyArray<QueuedBuy>) =>
      Effect.uninterruptible(
        driver(batch).pipe(
          Effect.ensuring(inFlight.release(1)),
          Effect.flatMap((left) => Effect.forEach(left, (queued) => queued.alone, { concurrency: "unbounded", discard: true })),
          Effect.ensuring(Effect.forEach(batch, (queued) => queued.abandon, { discard: true }))
        )
      )

    // at shutdown (finalizers run last first): the drainer stops, what is queued is abandoned, the batches under way end
    /** The batches under way, a fiber each: closing the set waits for them (they are uninterruptible). */
    const running = yield* FiberSet.make<void>()
    yield* Effect.addFinalizer(() => Effect.flatMap(batches.takeEverything, (left) => Effect.forEach(left, (queued) => queued.abandon, { discard: true })))
    yield* fibers.supervise("purchase-buy-engine", (beat) =>
      Effect.forever(Effect.gen(function*() {
        yield* inFlight.take(1)
        yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            // with buys held back, a batch starts at once; else the wait takes nothing, so an
            // interrupted one (shutdown) leaves every buy queued for the finalizer to answer
            if (!batches.holding()) yield* Effect.onInterrupt(restore(batches.whenQueued), () => inFlight.release(1))
            yield* FiberSet.run(running, runBatch(yield* batches.next))
          })
        )
        yield* beat
      })))

    const enqueue = <A, E>(made: readonly [QueuedBuy, Deferred.Deferred<A, E>]) =>
      Effect.suspend(() => {
        pending++
        return Effect.zipRight(batches.offer(made[0]), Deferred.await(made[1]))
      })

    /** /buy and /buy-sync: created (or found) in full whether or not the caller still waits. */
    const buy = (input: BuyByIdRequest): Effect.Effect<CreateOutcome, CreateError> =>
      Effect.flatMap(
        queuedBuyOf(
          input,
          createByIdIn(input),
          (outcome) => outcome._tag === "created" && afterCommit(outcome),
          { input, outcome: (bought): CreateOutcome => ({ _tag: "created", ...bought }) }
        ),
        enqueue
      ).pipe(Effect.withSpan("BuyEngine.buy", HOT_SPAN))

    /** One by-name attempt: bought after `guard` (which holds the cycle's record), in the same transaction. */
    const attempt = <E>(input: BuyItemInput, guard: Effect.Effect<void, E>): Effect.Effect<Bought, E | Refusal | Conflict> =>
      Effect.flatMap(
        queuedBuyOf(input, Effect.zipRight(guard, statements.buyItem(input).pipe(Effect.catchTag("ParseError", Effect.die))), afterCommit),
        enqueue
      ).pipe(Effect.withSpan("BuyEngine.attempt", HOT_SPAN))

    return {
      buy,
      attempt,
      /** Buys queued or in a batch, not yet answered. */
      pending: Effect.sync(() => pending)
    } as const
  }),
  dependencies: [
    BuyStatements.Default,
    Purchases.Default,
    CatalogueReservations.Default,
    PurchaseHandover.Default,
    BalanceCache.Default,
    Metrics.Default,
    Fibers.Default
  ]
}) {}
