/**
 * Start-up's garbage, collected once each start-up step ends. Loading the index, building the
 * first dump and the first reconciliation with the supplier allocate several times the heap they
 * leave (at 100,000 items about 1 GB of old space was dead at /ready). V8 grows its heap limit to
 * match and collects that garbage only a minute or two later (its memory reducer): until then the
 * process holds the memory, every scavenge is slower, and the eventual full collection paused the
 * event loop for 40 ms under load. A full collection right after the step costs 50-300 ms, once.
 * It needs node's `--expose-gc` (npm start and the Docker image pass it); without it nothing is done.
 */
import { Effect } from "effect"

export const collectStartupGarbage = (step: string) =>
  Effect.suspend(() => {
    const collect = globalThis.gc
    if (collect === undefined) return Effect.void
    const before = process.memoryUsage()
    const started = performance.now()
    collect()
    const after = process.memoryUsage()
    const mb = (bytes: number) => Math.round(bytes / 1024 / 1024)
    return Effect.logInfo("start-up garbage collected").pipe(Effect.annotateLogs({
      after: step,
      millis: Math.round(performance.now() - started),
      heap_used_mb: `${mb(before.heapUsed)} -> ${mb(after.heapUsed)}`,
      rss_mb: `${mb(before.rss)} -> ${mb(after.rss)}`
    }))
  })
