/**
 * The buy engine's queue of buys and its count of batches, in arrays, waits on an Effect Latch
 * (whose waiters are an array too, swapped when it opens).
 *
 * Effect's Queue, Semaphore and FiberSet keep their waiters and fibers in collections that live as
 * long as the engine and take and drop an entry per batch (Sets; the Queue's linked list): the
 * churn that made Effect's Set of root fibers keep every request's objects through young-generation
 * collections (Ops/FiberRoots.ts). This was changed with the rest of decision 0027 and not measured
 * apart from it. The arrays are swapped, not trimmed.
 */
import { Effect } from "effect"

/**
 * Waits until `ready()`, woken by `changed` to look again: the latch is closed before each wait
 * and opened by every change, which releases all its waiters.
 */
const makeChanges = () => {
  const latch = Effect.unsafeMakeLatch(false)
  const until = (ready: () => boolean): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (ready()) return Effect.void
      latch.unsafeClose()
      return Effect.zipRight(latch.await, until(ready))
    })
  return { until, changed: () => latch.unsafeOpen() } as const
}

/** Buys queued for the engine's one drainer, in order of arrival. */
export const makeBuyQueue = <A>() => {
  let queued: Array<A> = []
  const changes = makeChanges()

  const takeNow = (): Array<A> => {
    const taken = queued
    queued = []
    return taken
  }

  return {
    offer: (item: A): void => {
      queued.push(item)
      changes.changed()
    },
    /** Everything queued; when nothing is, waits for the next buy. */
    takeAll: Effect.map(changes.until(() => queued.length > 0), takeNow),
    /** Everything queued, now (possibly nothing). */
    takeNow
  } as const
}

/** Batches running, at most `max` at once; `whenNone` waits until none is (shutdown). */
export const makeBatchCount = (max: number) => {
  let running = 0
  const changes = makeChanges()

  return {
    /** Counts one more batch, once fewer than `max` run. */
    start: Effect.zipRight(
      changes.until(() => running < max),
      Effect.sync(() => {
        running++
      })
    ),
    end: Effect.sync(() => {
      running--
      changes.changed()
    }),
    whenNone: changes.until(() => running === 0)
  } as const
}
