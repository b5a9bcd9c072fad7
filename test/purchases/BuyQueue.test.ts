import { Effect, Fiber, Option } from "effect"
import { describe, expect, it } from "vitest"
import { makeBatchCount, makeBuyQueue } from "../../src/Purchases/BuyQueue.js"

/** Lets every fiber that can run do so. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

describe("the buy engine's queue", () => {
  it("gives everything queued, in order; with nothing queued it waits for the next buy", async () => {
    const queue = makeBuyQueue<number>()
    expect(queue.takeNow()).toEqual([])
    queue.offer(1)
    queue.offer(2)
    expect(await Effect.runPromise(queue.takeAll)).toEqual([1, 2])
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const waiting = yield* Effect.fork(queue.takeAll)
      yield* settle
      const before = yield* Fiber.poll(waiting)
      queue.offer(3)
      queue.offer(4)
      return [Option.isNone(before), yield* Fiber.join(waiting)] as const
    }))
    expect(taken).toEqual([true, [3, 4]])
    expect(queue.takeNow()).toEqual([])
  })

  it("counts batches: a start past the limit waits for an end, and whenNone for the last end", async () => {
    const count = makeBatchCount(2)
    const states = await Effect.runPromise(Effect.gen(function*() {
      yield* count.start
      yield* count.start
      const third = yield* Effect.fork(count.start)
      const none = yield* Effect.fork(count.whenNone)
      yield* settle
      const waitingAtTwo = [Option.isNone(yield* Fiber.poll(third)), Option.isNone(yield* Fiber.poll(none))]
      yield* count.end
      yield* Fiber.join(third)
      yield* count.end
      yield* settle
      const noneAtOne = Option.isNone(yield* Fiber.poll(none))
      yield* count.end
      yield* Fiber.join(none)
      return [...waitingAtTwo, noneAtOne]
    }))
    expect(states).toEqual([true, true, true])
  })
})
