/**
 * The buy engine's queue: Effect's unbounded Queue, with an Effect Latch that its one drainer
 * waits on.
 *
 * The drainer waits until a buy is queued without taking it (`whenQueued`), then takes everything
 * queued at once (`takeAll`, which never waits). It does not wait in `Queue.take`: a buy that
 * `take` hands to a drainer interrupted at that moment (shutdown) would be lost, and its caller
 * would wait for good. Here an interrupted wait leaves every buy queued, for the engine's
 * finalizer to answer (BuyEngine.ts).
 */
import { Chunk, Effect, Queue } from "effect"

export interface BuyQueue<A> {
  /** Queues a buy, behind those queued before it. */
  readonly offer: (item: A) => Effect.Effect<void>
  /** Returns once something is queued (at once if something is); takes nothing. */
  readonly whenQueued: Effect.Effect<void>
  /** Everything queued, in order of arrival, now (possibly nothing). */
  readonly takeAll: Effect.Effect<ReadonlyArray<A>>
}

export const makeBuyQueue = <A>(): Effect.Effect<BuyQueue<A>> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<A>()
    /** Opened by every offer. The waiter closes it before it looks at the queue, so no offer goes unseen. */
    const offered = yield* Effect.makeLatch(false)

    const whenQueued: Effect.Effect<void> = Effect.zipRight(
      offered.close,
      Effect.flatMap(Queue.isEmpty(queue), (empty) => empty ? Effect.zipRight(offered.await, whenQueued) : Effect.void)
    )

    return {
      offer: (item) => Effect.zipRight(Queue.offer(queue, item), offered.open),
      whenQueued,
      takeAll: Effect.map(Queue.takeAll(queue), Chunk.toReadonlyArray)
    }
  })
