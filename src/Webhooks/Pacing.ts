/**
 * The merchant API comes first: while its requests keep the process's event loop saturated, the
 * webhook sender starts fewer attempts (halving each tenth of a second, down to a trickle that
 * still makes progress), and it is unbounded again as soon as the loop has room. Deliveries are
 * at least once and may wait a little; a merchant's request may not. Without API requests, as in
 * a burst at night, the sender runs flat out.
 */
import { Effect } from "effect"
import { performance } from "node:perf_hooks"

const TICK_MS = 100
/** Above this share of a tick busy, with API traffic, the loop is saturated. */
const SATURATED = 0.9
/** Below it, there is room again. */
const ROOM = 0.75
/** API requests per tick that count as traffic. */
const TRAFFIC = 10
/** The least attempts started per tick while paced (20 a second). */
const TRICKLE = 2

export interface Pacer {
  /** Takes one start from this tick's budget; false when it is spent. */
  readonly take: () => boolean
  /** Runs every tick: measures, sets the budget, then runs `onTick` (to start what waited). */
  readonly run: (onTick: Effect.Effect<void>) => Effect.Effect<never>
}

export const makePacer = (apiRequestsAnswered: () => number): Pacer => {
  let budget = Number.POSITIVE_INFINITY
  let startedThisTick = 0
  const take = () => {
    if (startedThisTick >= budget) return false
    startedThisTick += 1
    return true
  }
  const run = (onTick: Effect.Effect<void>) =>
    Effect.gen(function*() {
      let lastUtilization = performance.eventLoopUtilization()
      let lastRequests = apiRequestsAnswered()
      while (true) {
        yield* Effect.sleep(TICK_MS)
        const utilization = performance.eventLoopUtilization(lastUtilization)
        lastUtilization = performance.eventLoopUtilization()
        const requests = apiRequestsAnswered()
        const traffic = requests - lastRequests >= TRAFFIC
        lastRequests = requests
        if (traffic && utilization.utilization >= SATURATED) {
          budget = Math.max(TRICKLE, Math.floor(Math.min(budget, startedThisTick) / 2))
        } else if (!traffic || utilization.utilization < ROOM) {
          budget = Number.POSITIVE_INFINITY
        }
        startedThisTick = 0
        yield* onTick
      }
    })
  return { take, run }
}
