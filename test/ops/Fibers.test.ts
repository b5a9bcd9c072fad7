import { Effect, Logger, LogLevel, TestClock, TestContext } from "effect"
import { describe, expect, it } from "vitest"
import { Fibers } from "../../src/Ops/Fibers.js"

describe("supervised fibers", () => {
  it("a fiber that keeps failing is restarted at least every 5 s once its backoff has grown (so it is back soon after an outage)", async () => {
    const restarts = await Effect.runPromise(
      Effect.scoped(Effect.gen(function*() {
        const fibers = yield* Fibers
        yield* fibers.supervise("always-failing", () => Effect.fail("boom"))
        const count = () => fibers.list().find((f) => f.name === "always-failing")!.restarts
        // 100 ms doubling: after a minute the backoff is at its cap
        yield* TestClock.adjust("60 seconds")
        const samples: Array<number> = [count()]
        for (let i = 0; i < 4; i++) {
          yield* TestClock.adjust("5 seconds")
          samples.push(count())
        }
        return samples
      })).pipe(
        Effect.provide(Fibers.Default),
        Effect.provide(TestContext.TestContext),
        Logger.withMinimumLogLevel(LogLevel.None)
      )
    )
    for (let i = 1; i < restarts.length; i++) expect(restarts[i]! - restarts[i - 1]!).toBeGreaterThanOrEqual(1)
  })
})
