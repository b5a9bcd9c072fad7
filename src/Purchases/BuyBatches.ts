/**
 * How queued buys become the buy engine's batches: what a queued buy is (what it may not share a
 * batch with, how each driver runs and answers it), the queue, and the next batch taken from it.
 *
 * The queue is Effect's unbounded Queue with an Effect Latch its one drainer waits on. The drainer
 * waits until a buy is queued without taking it (`whenQueued`), then takes everything queued at
 * once (`takeAll`, which never waits). It does not wait in `Queue.take`: a buy that `take` hands
 * to a drainer interrupted at that moment (shutdown) would be lost, and its caller would wait for
 * good. Here an interrupted wait leaves every buy queued, for the engine's finalizer to answer.
 */
import { Chunk, Effect, type Exit, type Option, Queue } from "effect"
import type { Conflict } from "../Domain/Errors.js"
import type { Bought, BuyByIdRequest } from "./BuyStatements.js"

/** Buys in one batch at most. */
const BATCH_MAX = 32

/** A queued buy: what it may not share a batch with, and how each driver runs and answers it. */
export interface QueuedBuy {
  readonly merchantId: string
  readonly customId: string
  readonly itemId: string
  /** A buy by id, which the pipelined driver may buy, and how it answers one it bought. */
  readonly byId: Option.Option<{ readonly input: BuyByIdRequest; readonly bought: (bought: Bought) => Effect.Effect<void> }>
  /** Runs in a transaction of its own and answers. */
  readonly alone: Effect.Effect<void>
  /** Runs in a savepoint of the current transaction; `settle` answers once the batch's commit is known. */
  readonly inBatch: Effect.Effect<void>
  /** True if it created a purchase. */
  readonly settle: (batch: Exit.Exit<void, Conflict>) => Effect.Effect<boolean>
  /** Answers with a defect if nothing answered it (the engine stopped). */
  readonly abandon: Effect.Effect<void>
}

/** Whether two buys may share a batch: the buy statements assume the item and the record are theirs alone. */
const compatible = (a: QueuedBuy, b: QueuedBuy) => a.itemId !== b.itemId && (a.merchantId !== b.merchantId || a.customId !== b.customId)

export interface BuyBatches {
  /** Queues a buy, behind those queued before it. */
  readonly offer: (buy: QueuedBuy) => Effect.Effect<void>
  /** Whether buys taken earlier wait for the next batch (then it can start at once). */
  readonly holding: () => boolean
  /** Returns once something is queued (at once if something is); takes nothing. */
  readonly whenQueued: Effect.Effect<void>
  /**
   * The held buys and everything queued, as a batch of compatible buys (BATCH_MAX at most) in
   * order of arrival; the rest is held for the next one. Never waits.
   */
  readonly next: Effect.Effect<ReadonlyArray<QueuedBuy>>
  /** Every buy held or queued, taken (at shutdown, to be answered). */
  readonly takeEverything: Effect.Effect<ReadonlyArray<QueuedBuy>>
}

export const makeBuyBatches: Effect.Effect<BuyBatches> = Effect.gen(function*() {
  const queue = yield* Queue.unbounded<QueuedBuy>()
  /** Opened by every offer. The waiter closes it before it looks at the queue, so no offer goes unseen. */
  const offered = yield* Effect.makeLatch(false)
  /** Buys taken from the queue that could not join the last batch: the next one starts with them. */
  let held: Array<QueuedBuy> = []
  const takeAll = Effect.map(Queue.takeAll(queue), Chunk.toReadonlyArray)

  const whenQueued: Effect.Effect<void> = Effect.zipRight(
    offered.close,
    Effect.flatMap(Queue.isEmpty(queue), (empty) => empty ? Effect.zipRight(offered.await, whenQueued) : Effect.void)
  )

  const next = Effect.map(takeAll, (queued) => {
    const waiting = [...held, ...queued]
    const batch: Array<QueuedBuy> = []
    held = []
    for (const buy of waiting) {
      if (batch.length === 0 || (batch.length < BATCH_MAX && batch.every((other) => compatible(other, buy)))) batch.push(buy)
      else held.push(buy)
    }
    return batch
  })

  return {
    offer: (buy) => Effect.zipRight(Queue.offer(queue, buy), offered.open),
    holding: () => held.length > 0,
    whenQueued,
    next,
    takeEverything: Effect.map(takeAll, (queued) => {
      const all = [...held, ...queued]
      held = []
      return all
    })
  }
})
