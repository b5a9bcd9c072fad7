/**
 * V8's young-generation collections, split over its helper threads or not, by the catalogue's size.
 *
 * Node gives V8 four helper threads; the service is sized for two cores. With a small old
 * generation a young collection is short, and splitting it costs more than it saves: with the
 * catalogue feed at 1,000 changes a second on 20,000 items, the process spent about 80 µs of CPU
 * per logged change split, 62–70 on the main thread alone. With millions of items the old
 * generation's pointers into the young one make each collection long, and alone the main thread
 * took one of 94 ms while a dump of 2,500,000 items was regenerated (21–34 ms split; the target is
 * 50). So collections are split from LARGE_CATALOGUE items on. (bench/RESULTS.md, "2026-11-25,
 * fourth session".) V8 reads the flag at each collection, so it can change at any time.
 *
 * The price: under /buy at 16 clients the main thread's collections take 10-38 ms (by load, not
 * catalogue size), and split the p99 was 45 ms against 63; but split at every size the feed cost
 * 1.30 times its bare baseline against 1.14 (target 1.25), so the rule stands ("fifth session").
 *
 * The young generation's size (64 MB) cannot change once the heap exists: it is a node flag in
 * package.json's start script and in the Dockerfile.
 */
import { setFlagsFromString } from "node:v8"

const LARGE_CATALOGUE = 500_000

let split: boolean | undefined

/** Sets how young collections run for a catalogue of `items` (the engine calls it after each load). */
export const tuneForCatalogue = (items: number): void => {
  const wanted = items >= LARGE_CATALOGUE
  if (wanted === split) return
  split = wanted
  setFlagsFromString(wanted ? "--parallel-scavenge" : "--no-parallel-scavenge")
}
