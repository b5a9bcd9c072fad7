import { SqlError } from "@effect/sql"
import { Effect, HashMap, Logger, LogLevel, Option, TestClock, TestContext } from "effect"
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

  it("a fiber that failed because the database is out of reach restarts within 1 s, logged as a warning that says so; other failures are errors", async () => {
    const lost = new SqlError.SqlError({ cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }), message: "x" })
    const logs: Array<{ readonly level: string; readonly message: string; readonly fiber: unknown }> = []
    const logger = Logger.make(({ annotations, logLevel, message }) => {
      const [text] = Array.isArray(message) ? message : [message]
      logs.push({ level: logLevel.label, message: String(text), fiber: HashMap.get(annotations, "fiber").pipe(Option.getOrUndefined) })
    })
    const restarts = await Effect.runPromise(
      Effect.scoped(Effect.gen(function*() {
        const fibers = yield* Fibers
        yield* fibers.supervise("listener", () => Effect.fail(lost))
        yield* fibers.supervise("defect", () => Effect.die(new Error("a bug")))
        const count = (name: string) => fibers.list().find((f) => f.name === name)!.restarts
        yield* TestClock.adjust("60 seconds")
        const before = [count("listener"), count("defect")] as const
        yield* TestClock.adjust("5 seconds")
        return { listener: count("listener") - before[0], defect: count("defect") - before[1] }
      })).pipe(
        Effect.provide(Fibers.Default),
        Effect.provide(TestContext.TestContext),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
    )
    // at most 1 s apart once the backoff has grown, against 5 s for any other failure
    expect(restarts.listener).toBeGreaterThanOrEqual(5)
    expect(restarts.defect).toBe(1)
    const of = (fiber: string) => logs.filter((l) => l.fiber === fiber)
    expect(new Set(of("listener").map((l) => `${l.level} ${l.message}`))).toEqual(
      new Set(["WARN supervised fiber lost its database connection; restarting"])
    )
    expect(new Set(of("defect").map((l) => `${l.level} ${l.message}`))).toEqual(new Set(["ERROR supervised fiber stopped; restarting"]))
  })
})
