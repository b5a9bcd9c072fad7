/**
 * How the simulated supplier's snapshot stream (dist/src/Providers/Simulator/SupplierSim.js), which
 * the sync leader reconciles at every start, is produced: pages of 1,000 listings from
 * Stream.range(0, pages - 1, 1) |> Stream.map(page -> listings). Stream.range used to emit its
 * numbers in chunks of 4,096, and Stream.map maps a whole chunk at once (every page made before the
 * first was written; now one page a chunk), so this measures when the first page reaches the
 * consumer, how long the event loop is blocked meanwhile, and the heap then.
 *
 *   node --expose-gc bench/diagnostics/supplier-snapshot.mjs [N=200000]
 */
import { Effect, Layer, Stream } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { Settings } from "../../dist/src/Config.js"
import { SupplierSimLive } from "../../dist/src/Providers/Simulator/SupplierSim.js"
import { Supplier } from "../../dist/src/Providers/Supplier.js"

const N = Number(process.argv[2] ?? 200_000)
const gc = globalThis.gc ?? (() => {})
process.env.SIM_CATALOGUE_SIZE = String(N)
process.env.SIM_CHURN_PER_SECOND = "0"
delete process.env.SIM_CATALOGUE

gc()
const heap0 = process.memoryUsage().heapUsed
const delay = monitorEventLoopDelay({ resolution: 10 })
delay.enable()
let longestTick = 0
let last = performance.now()
const ticker = setInterval(() => {
  const now = performance.now()
  longestTick = Math.max(longestTick, now - last)
  last = now
}, 5)

const program = Effect.gen(function*() {
  const supplier = yield* Supplier
  const t0 = performance.now()
  let firstAt
  let heapAtFirst
  let pages = 0
  let listings = 0
  yield* supplier.snapshot.pipe(Stream.runForEach((page) =>
    Effect.gen(function*() {
      if (firstAt === undefined) {
        firstAt = performance.now() - t0
        heapAtFirst = process.memoryUsage().heapUsed
      }
      pages++
      listings += page.length
      yield* Effect.sleep("1 millis") // the consumer (reconcile) waits on the database between pages
    })
  ))
  return { firstAt, heapAtFirst, pages, listings, total: performance.now() - t0 }
})

const r = await Effect.runPromise(program.pipe(Effect.provide(SupplierSimLive.pipe(Layer.provide(Settings.Default)))))
clearInterval(ticker)
delay.disable()
console.log(`SIM_CATALOGUE_SIZE=${N}: ${r.pages} pages, ${r.listings} listings`)
console.log(`first page reached the consumer after ${Math.round(r.firstAt)} ms; the whole snapshot consumed in ${Math.round(r.total)} ms`)
console.log(
  `heap when the first page arrived: ${Math.round((r.heapAtFirst - heap0) / 2 ** 20)} MiB above the start (${
    Math.round((r.heapAtFirst - heap0) / N)
  } B per listing)`
)
console.log(`event loop: longest gap between 5 ms timer ticks ${Math.round(longestTick)} ms; monitorEventLoopDelay max ${Math.round(delay.max / 1e6)} ms`)
