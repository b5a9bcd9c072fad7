/** Breaking long work on the event loop into slices. */
import { Effect } from "effect"

/**
 * Lets pending I/O run (a request, a probe) between slices of work. Effect.yieldNow is not enough:
 * the default scheduler resumes a yielding fiber in a microtask, up to 2,048 times in a row,
 * before node's event loop gets a turn.
 */
export const yieldToEventLoop = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Applies `apply` to each item in slices that hold the event loop for about `sliceMs` at most (at
 * least one item a slice), letting it run between slices; `sliceDone` follows each slice, with the
 * range [from, to) of the items it applied.
 */
export const forEachInSlices = <A>(
  items: ReadonlyArray<A>,
  options: {
    readonly sliceMs: number
    readonly apply: (item: A) => void
    readonly sliceDone: (from: number, to: number) => void
    readonly now?: () => number
  }
) =>
  Effect.gen(function*() {
    const now = options.now ?? (() => performance.now())
    for (let next = 0; next < items.length;) {
      if (next > 0) yield* yieldToEventLoop
      const from = next
      const started = now()
      do options.apply(items[next++]!)
      while (next < items.length && now() - started < options.sliceMs)
      options.sliceDone(from, next)
    }
  })
