/**
 * Buy by name (spec 4.3, 4.4 rule 3): the cheapest live item of the exact name at or below
 * max_price (and within estimated_time) is bought; a rejected attempt (refunded by the worker) is
 * followed by the next cheapest, up to 5 attempts in a shared budget. The cycle runs in the
 * service's scope, not the request's: a client that disconnects stops nothing. One idempotency
 * record per custom_id: a repeat reads the latest attempt and never starts a second cycle.
 *
 * A cycle outlives its process: its parameters and deadline are kept with its record, and the
 * process running it holds a lease that it renews. If that process dies, another one (the
 * `purchase-by-name-recovery` fiber of every process) takes the cycle over where it stopped,
 * within what is left of its budget, or closes it. Each attempt is bought holding the record
 * locked as its owner, so two processes never try items of one cycle at once.
 */
import { Cause, Data, Effect, Exit, Fiber, Option } from "effect"
import { CatalogueEngine } from "../Catalogue/Engine.js"
import { Settings } from "../Config.js"
import { isConnectionLossCause } from "../Db/ConnectionLoss.js"
import { Conflict, InsufficientBalance, NoItemsFound, PurchaseFailed } from "../Domain/Errors.js"
import { centsFloor } from "../Domain/Money.js"
import { Fibers } from "../Ops/Fibers.js"
import { BuyEngine } from "./BuyEngine.js"
import type { Recipient } from "./BuyStatements.js"
import { CyclesRepo } from "./CyclesRepo.js"
import { Purchases } from "./Purchases.js"
import { PurchasesRepo } from "./Repo.js"
import type { PurchaseRow } from "./Rows.js"

const MAX_ATTEMPTS = 5
/** Items that vanished between the index and the lock do not count as attempts, up to this many. */
const MAX_PICKS = 20
/** How long a cycle's process holds it without renewing; it renews every third of that. */
const CYCLE_LEASE_SECONDS = 6
const RENEW_EVERY = "2 seconds"
/** How often each process looks for cycles whose process died. */
const RECOVERY_EVERY = "2 seconds"
const RECOVERY_BATCH = 16

export interface BuyByNameRequest {
  readonly merchantId: string
  readonly marketHashName: string
  readonly maxPrice: number
  readonly customId: string
  readonly recipient: Recipient
  readonly estimatedTime: number | null
}

export type ByNameOutcome =
  | { readonly _tag: "accepted"; readonly purchase: PurchaseRow; readonly balanceCents: number }
  | { readonly _tag: "in_flight"; readonly purchase: PurchaseRow; readonly balanceCents: number }
  | { readonly _tag: "failed_attempt"; readonly purchase: PurchaseRow }

export type ByNameError = NoItemsFound | InsufficientBalance | PurchaseFailed | Conflict

/** The cycle's record is no longer this process's (it stalled past its lease and another took it over). */
class CycleLost extends Data.TaggedError("CycleLost") {}

/** Where a cycle stands: the attempts made, the items picked, the last failed attempt, one awaiting its verdict. */
interface Progress {
  readonly attempts: number
  readonly tried: ReadonlySet<string>
  readonly last: PurchaseRow | undefined
  readonly pending: PurchaseRow | undefined
}

const fresh: Progress = { attempts: 0, tried: new Set(), last: undefined, pending: undefined }

export class BuyByName extends Effect.Service<BuyByName>()("BuyByName", {
  scoped: Effect.gen(function*() {
    const settings = yield* Settings
    const engine = yield* CatalogueEngine
    const purchases = yield* Purchases
    const buyEngine = yield* BuyEngine
    const fibers = yield* Fibers
    const cyclesRepo = yield* CyclesRepo
    const purchasesRepo = yield* PurchasesRepo
    const cycles = yield* Effect.scope

    /**
     * What an attempt's wait ends on. A provider top-up does not end it (unlike /buy-sync's, spec
     * 4.3): by name, 202 means only that the budget ran out with the attempt in flight.
     */
    const verdict = (row: PurchaseRow) => row.status === "failed" || row.acknowledged || row.status === "completed"
    /**
     * An attempt the provider rejected before accepting it: the cycle tries the next item. One that
     * was accepted (acknowledged, its offer sent, completed) and failed later (declined, reversed)
     * ended the cycle when it was accepted, and is never followed by another.
     */
    const rejected = (row: PurchaseRow) => row.status === "failed" && !row.acknowledged && row.tradeOfferId === null && row.completedAt === null

    const record = (request: BuyByNameRequest) => ({ merchantId: request.merchantId, customId: request.customId })

    /** The cycle's record, locked, if this process still runs it: taken in each attempt's transaction. */
    const holdRecord = (request: BuyByNameRequest) =>
      cyclesRepo.hold(record(request)).pipe(
        Effect.orDie,
        Effect.flatMap((held) => held ? Effect.void : Effect.fail(new CycleLost()))
      )

    const renewLease = (request: BuyByNameRequest) =>
      Effect.forever(Effect.zipRight(
        Effect.sleep(RENEW_EVERY),
        cyclesRepo.renewLease({ ...record(request), leaseSeconds: CYCLE_LEASE_SECONDS }).pipe(Effect.ignoreLogged)
      ))

    /**
     * How a cycle ends for its record: answered, it is done; interrupted (this process stops) or cut
     * short by a lost database connection, its lease is given up so that a process takes it over
     * where it stopped (closed as done, a repeat of its request would find no attempt for good);
     * lost, it is not ours.
     */
    const settle = (request: BuyByNameRequest, exit: Exit.Exit<unknown, unknown>) =>
      Exit.isInterrupted(exit) || (Exit.isFailure(exit) && isConnectionLossCause(exit.cause))
        ? cyclesRepo.giveUp(record(request))
        : Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error instanceof CycleLost)
        ? Effect.void
        : cyclesRepo.close(record(request))

    /** Runs a cycle from where it stands until it is answered or the budget ends. */
    const cycle = (request: BuyByNameRequest, deadline: number, from: Progress): Effect.Effect<ByNameOutcome, ByNameError | CycleLost> =>
      Effect.gen(function*() {
        yield* Effect.forkScoped(renewLease(request))
        const tried = new Set(from.tried)
        let attempts = from.attempts
        let last = from.last
        let pending = from.pending
        const filters = { marketHashName: request.marketHashName, maxPrice: centsFloor(request.maxPrice), maxMinutes: request.estimatedTime ?? undefined }
        for (;;) {
          if (pending !== undefined) {
            const seen = yield* purchases.waitFor(request.merchantId, pending.id, verdict, Math.max(0, deadline - Date.now()))
            if (!rejected(seen)) {
              const balanceCents = yield* purchases.availableCents(request.merchantId)
              return seen.acknowledged || seen.status === "completed"
                ? { _tag: "accepted" as const, purchase: seen, balanceCents }
                : { _tag: "in_flight" as const, purchase: seen, balanceCents }
            }
            last = seen
            pending = undefined
          }
          if (attempts >= MAX_ATTEMPTS || tried.size >= MAX_PICKS || Date.now() >= deadline) break
          yield* engine.refresh
          const candidate = engine.page(filters, "price_asc", undefined, tried.size + 1).entries.find((e) => !tried.has(e.id))
          if (candidate === undefined) break
          tried.add(candidate.id)
          const created = yield* buyEngine.attempt({
            merchantId: request.merchantId,
            itemId: candidate.id,
            maxPrice: request.maxPrice,
            customId: request.customId,
            attempt: attempts + 1,
            recipient: request.recipient
          }, holdRecord(request)).pipe(Effect.either)
          if (created._tag === "Left") {
            if (created.left._tag === "InsufficientBalance" || created.left._tag === "CycleLost") return yield* created.left
            continue // gone or repriced since the index saw it: pick the next one
          }
          attempts++
          pending = created.right.purchase
        }
        if (attempts === 0) {
          return yield* new NoItemsFound({ message: `No active item named ${JSON.stringify(request.marketHashName)} at or below max_price.` })
        }
        return yield* new PurchaseFailed({
          message: `No attempt succeeded (${attempts} tried${last?.failureCode ? `, last: ${last.failureCode}` : ""}); failed attempts are refunded.`
        })
      }).pipe(
        Effect.scoped,
        Effect.tapError((error) =>
          // Nothing was bought: the request leaves no trace, so it can be sent again.
          error._tag === "NoItemsFound" || error._tag === "InsufficientBalance"
            ? Effect.gen(function*() {
              const any = yield* purchases.latestByCustomId(request.merchantId, request.customId)
              if (Option.isNone(any)) yield* cyclesRepo.remove(record(request))
            }).pipe(Effect.orDie)
            : Effect.void
        ),
        Effect.onExit((exit) => settle(request, exit).pipe(Effect.orDie))
      )

    /** A repeat: the latest attempt by custom_id alone, waiting for the first if the cycle just began. */
    const repeat = (request: BuyByNameRequest): Effect.Effect<ByNameOutcome, ByNameError> =>
      Effect.gen(function*() {
        const deadline = Date.now() + settings.byNameBudgetSeconds * 1000
        for (;;) {
          const latest = yield* purchases.latestByCustomId(request.merchantId, request.customId)
          const saved = yield* purchases.request(request.merchantId, request.customId)
          if (Option.isSome(latest)) {
            const row = latest.value
            if (row.status === "failed") return { _tag: "failed_attempt" as const, purchase: row }
            const balanceCents = yield* purchases.availableCents(request.merchantId)
            return row.acknowledged || row.status === "completed"
              ? { _tag: "accepted" as const, purchase: row, balanceCents }
              : { _tag: "in_flight" as const, purchase: row, balanceCents }
          }
          if (Option.isNone(saved) || saved.value.cycleState === "done" || Date.now() >= deadline) {
            return yield* new Conflict({ message: "The first request with this custom_id has not created an attempt; retry once." })
          }
          yield* Effect.sleep("50 millis")
        }
      })

    const lost = () => new Conflict({ message: "A concurrent update conflicted; retry once with the same custom_id." })

    const buy = (request: BuyByNameRequest) =>
      Effect.gen(function*() {
        const deadline = Date.now() + settings.byNameBudgetSeconds * 1000
        const inserted = yield* cyclesRepo.insert({
          ...record(request),
          marketHashName: request.marketHashName,
          tradeUrl: request.recipient.tradeUrl,
          steamId: request.recipient.steamId,
          maxPrice: String(request.maxPrice),
          estimatedTime: request.estimatedTime,
          deadline: new Date(deadline),
          leaseSeconds: CYCLE_LEASE_SECONDS
        }).pipe(Effect.orDie)
        if (!inserted) return yield* repeat(request)
        const fiber = yield* Effect.forkIn(cycle(request, deadline, fresh), cycles)
        return yield* Fiber.join(fiber).pipe(Effect.catchTag("CycleLost", () => Effect.fail(lost())))
      }).pipe(Effect.withSpan("BuyByName.buy"))

    /** Where an abandoned cycle stood: its attempts so far, the latest one unless the provider rejected it. */
    const progressOf = (merchantId: string, customId: string) =>
      Effect.map(
        purchasesRepo.attempts({ merchantId, customId }).pipe(Effect.orDie),
        (rows): Progress => {
          const latest = rows[rows.length - 1]
          return {
            attempts: rows.length,
            tried: new Set(rows.flatMap((row) => row.itemId === null ? [] : [row.itemId])),
            last: latest !== undefined && rejected(latest) ? latest : undefined,
            // an attempt awaiting its verdict, or accepted already (then the cycle ends with it)
            pending: latest !== undefined && !rejected(latest) ? latest : undefined
          }
        }
      )

    /** Takes over running cycles whose process died, and carries each on (or closes it) in this process's scope. */
    const recover = Effect.gen(function*() {
      const claimed = yield* cyclesRepo.claimAbandoned({ limit: RECOVERY_BATCH, leaseSeconds: CYCLE_LEASE_SECONDS })
      for (const row of claimed) {
        const request: BuyByNameRequest = {
          merchantId: row.merchantId,
          customId: row.customId,
          marketHashName: row.marketHashName ?? "",
          maxPrice: Number(row.maxPrice),
          recipient: { tradeUrl: row.tradeUrl, steamId: row.steamId },
          estimatedTime: row.estimatedTime
        }
        // a cycle begun before its parameters were kept cannot go on: its deadline is taken as passed
        const deadline = row.maxPrice === null || row.deadline === null ? 0 : row.deadline.getTime()
        const progress = yield* progressOf(row.merchantId, row.customId)
        yield* Effect.logInfo("resuming a buy-by-name cycle whose process stopped").pipe(
          Effect.annotateLogs({ merchant_id: row.merchantId, custom_id: row.customId, attempts: progress.attempts })
        )
        yield* Effect.forkIn(Effect.ignore(cycle(request, deadline, progress)), cycles)
      }
    })
    yield* fibers.supervise(
      "purchase-by-name-recovery",
      (beat) => Effect.forever(Effect.zipRight(Effect.zipRight(recover, beat), Effect.sleep(RECOVERY_EVERY)))
    )

    return { buy } as const
  }),
  dependencies: [Purchases.Default, BuyEngine.Default, CyclesRepo.Default, PurchasesRepo.Default, CatalogueEngine.Default, Fibers.Default]
}) {}
