/**
 * Does \`yield* Effect.yieldNow()\` between slices of synchronous work (as Dump.build and
 * Engine.load do) let the event loop serve I/O and timers? Counts 1 ms timer callbacks that run
 * between 20 slices of 5 ms of work, for three ways of yielding.
 *
 *   node bench/diagnostics/yield-check.mjs
 */
import { Effect } from "effect"
const busy = (ms) => {
  const end = performance.now() + ms
  while (performance.now() < end);
}
let ticks = 0
const iv = setInterval(() => ticks++, 1)
const run = (label, yieldEffect) =>
  Effect.runPromise(Effect.gen(function*() {
    const t0 = ticks
    const start = performance.now()
    for (let i = 0; i < 20; i++) {
      busy(5)
      yield* yieldEffect
    }
    return `${label}: 20 x 5 ms of work took ${(performance.now() - start).toFixed(0)} ms; timer callbacks that ran in between: ${ticks - t0}`
  })).then(console.log)
await new Promise((r) => setTimeout(r, 20))
await run("Effect.yieldNow()          ", Effect.yieldNow())
await run("Effect.sleep(0)            ", Effect.sleep(0))
await run(
  "setImmediate (Effect.async)",
  Effect.async((resume) => {
    setImmediate(() => resume(Effect.void))
  })
)
clearInterval(iv)
