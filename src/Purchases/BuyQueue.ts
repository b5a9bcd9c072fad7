/**
 * The buy engine's queue of buys and its count of batches, in arrays, each wait on a Deferred of
 * its own.
 *
 * Effect's Queue, Semaphore and FiberSet keep their waiters and fibers in collections that live as
 * long as the engine and take and drop an entry per batch (Sets; the Queue's linked list): the
 * churn that made Effect's Set of root fibers keep every request's objects through young-generation
 * collections (Ops/FiberRoots.ts). This was changed with the rest of decision 0027 and not measured
 * apart from it. Here a wait is a fresh Deferred, and the arrays are swapped, not trimmed.
 */
import { Deferred, Effect, Exit } from "effect"

/** Wakes every Deferred of `waiting` (the list is swapped first: a woken waiter may wait again). */
const wakeAll = (waiting: Array<Deferred.Deferred<void>>) => {
  for (const waiter of waiting) Deferred.unsafeDone(waiter, Exit.void)
}

/** Buys queued for the engine's one drainer, in order of arrival. */
export const makeBuyQueue = <A>() => {
  let queued: Array<A> = []
  let waiting: Array<Deferred.Deferred<void>> = []

  const takeNow = (): Array<A> => {
    const taken = queued
    queued = []
    return taken
  }

  /** Everything queued; when nothing is, waits for the next buy. */
  const takeAll: Effect.Effect<Array<A>> = Effect.suspend(() => {
    if (queued.length > 0) return Effect.succeed(takeNow())
    return Effect.flatMap(Deferred.make<void>(), (woken) => {
      waiting.push(woken)
      return Effect.zipRight(Deferred.await(woken), takeAll)
    })
  })

  return {
    offer: (item: A): void => {
      queued.push(item)
      if (waiting.length === 0) return
      const woken = waiting
      waiting = []
      wakeAll(woken)
    },
    takeAll,
    /** Everything queued, now (possibly nothing). */
    takeNow
  } as const
}

/** Batches running, at most `max` at once; `whenNone` waits until none is (shutdown). */
export const makeBatchCount = (max: number) => {
  let running = 0
  let waiting: Array<Deferred.Deferred<void>> = []

  const changed = () => {
    if (waiting.length === 0) return
    const woken = waiting
    waiting = []
    wakeAll(woken)
  }

  const waitUntil = (ready: () => boolean): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (ready()) return Effect.void
      return Effect.flatMap(Deferred.make<void>(), (woken) => {
        waiting.push(woken)
        return Effect.zipRight(Deferred.await(woken), waitUntil(ready))
      })
    })

  return {
    /** Counts one more batch, once fewer than `max` run. */
    start: Effect.zipRight(
      waitUntil(() => running < max),
      Effect.sync(() => {
        running++
      })
    ),
    end: Effect.sync(() => {
      running--
      changed()
    }),
    whenNone: waitUntil(() => running === 0)
  } as const
}
