import { Effect, Fiber, Option } from "effect"
import { describe, expect, it } from "vitest"
import { makeBuyQueue } from "../../src/Purchases/BuyQueue.js"

/** Lets every fiber that can run do so. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

describe("the buy engine's queue", () => {
  it("gives everything queued, in order of arrival; with nothing queued, nothing", async () => {
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const queue = yield* makeBuyQueue<number>()
      const empty = yield* queue.takeAll
      yield* queue.offer(1)
      yield* queue.offer(2)
      yield* queue.offer(3)
      return [empty, yield* queue.takeAll, yield* queue.takeAll]
    }))
    expect(taken).toEqual([[], [1, 2, 3], []])
  })

  it("whenQueued returns at once when something is queued, else once something is, and takes nothing", async () => {
    const states = await Effect.runPromise(Effect.gen(function*() {
      const queue = yield* makeBuyQueue<number>()
      yield* queue.offer(1)
      yield* queue.whenQueued
      yield* queue.whenQueued
      const first = yield* queue.takeAll
      const waiting = yield* Effect.fork(queue.whenQueued)
      yield* settle
      const waitsWhileEmpty = Option.isNone(yield* Fiber.poll(waiting))
      yield* queue.offer(2)
      yield* Fiber.join(waiting)
      return [first, waitsWhileEmpty, yield* queue.takeAll]
    }))
    expect(states).toEqual([[1], true, [2]])
  })

  it("a wait interrupted as a buy arrives loses nothing: the buy stays queued", async () => {
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const queue = yield* makeBuyQueue<number>()
      const waiting = yield* Effect.fork(queue.whenQueued)
      yield* settle
      // the buy and the interruption in the same step, as at shutdown
      yield* queue.offer(1)
      yield* Fiber.interrupt(waiting)
      const afterInterruption = yield* queue.takeAll
      // a later wait sees later buys
      const next = yield* Effect.fork(queue.whenQueued)
      yield* queue.offer(2)
      yield* Fiber.join(next)
      return [afterInterruption, yield* queue.takeAll]
    }))
    expect(taken).toEqual([[1], [2]])
  })

  it("several waits in turn, each closing the latch again, all see their buy", async () => {
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const queue = yield* makeBuyQueue<number>()
      const seen: Array<ReadonlyArray<number>> = []
      for (let i = 0; i < 5; i++) {
        const waiting = yield* Effect.fork(queue.whenQueued)
        yield* settle
        yield* queue.offer(i)
        yield* Fiber.join(waiting)
        seen.push(yield* queue.takeAll)
      }
      return seen
    }))
    expect(taken).toEqual([[0], [1], [2], [3], [4]])
  })
})
