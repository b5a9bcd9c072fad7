/**
 * The buy engine's queue and batches (src/Purchases/BuyBatches.ts): a batch is what was held and
 * queued, in order of arrival; buys of one item or one idempotency record never share a batch (the
 * later is held for the next one, ahead of later arrivals); a batch holds 32 buys at most; a wait
 * for the queue sees every buy, also one that arrives as the wait is interrupted.
 */
import { Effect, Fiber, Option } from "effect"
import { describe, expect, it } from "vitest"
import { makeBuyBatches, type QueuedBuy } from "../../src/Purchases/BuyBatches.js"

/** Lets every fiber that can run do so. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

/** A queued buy named `name` (its custom_id) of `itemId` by `merchantId`; the batches only read those keys. */
const buy = (name: string, itemId = `item-${name}`, merchantId = "m1"): QueuedBuy => ({
  merchantId,
  customId: name,
  itemId,
  byId: Option.none(),
  alone: Effect.void,
  inBatch: Effect.void,
  settle: () => Effect.succeed(false),
  abandon: Effect.void
})
const names = (batch: ReadonlyArray<QueuedBuy>) => batch.map((queued) => queued.customId)

describe("the buy engine's batches", () => {
  it("give everything queued, in order of arrival; with nothing queued, nothing", async () => {
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const batches = yield* makeBuyBatches
      const empty = yield* batches.next
      for (const name of ["a", "b", "c"]) yield* batches.offer(buy(name))
      return [empty, yield* batches.next, yield* batches.next].map(names)
    }))
    expect(taken).toEqual([[], ["a", "b", "c"], []])
  })

  it("hold a buy of an item or a record already in the batch for the next one, ahead of later arrivals", async () => {
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const batches = yield* makeBuyBatches
      yield* batches.offer(buy("a", "item-1"))
      yield* batches.offer(buy("b", "item-1"))
      yield* batches.offer(buy("a", "item-2"))
      yield* batches.offer(buy("a", "item-3", "m2"))
      const first = yield* batches.next
      const holding = batches.holding()
      yield* batches.offer(buy("c"))
      return [names(first), holding, names(yield* batches.next), batches.holding()]
    }))
    // "b" takes item-1 and m1's "a" is a record already in the batch; m2's "a" is another record
    expect(taken).toEqual([["a", "a"], true, ["b", "a", "c"], false])
  })

  it("make batches of 32 buys at most", async () => {
    const sizes = await Effect.runPromise(Effect.gen(function*() {
      const batches = yield* makeBuyBatches
      for (let i = 0; i < 70; i++) yield* batches.offer(buy(`b${i}`))
      return [(yield* batches.next).length, (yield* batches.next).length, (yield* batches.next).length]
    }))
    expect(sizes).toEqual([32, 32, 6])
  })

  it("give up every held and queued buy at shutdown", async () => {
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const batches = yield* makeBuyBatches
      yield* batches.offer(buy("a", "item-1"))
      yield* batches.offer(buy("b", "item-1"))
      yield* batches.next
      yield* batches.offer(buy("c"))
      return [names(yield* batches.takeEverything), batches.holding(), names(yield* batches.next)]
    }))
    expect(taken).toEqual([["b", "c"], false, []])
  })

  it("whenQueued returns at once when something is queued, else once something is, and takes nothing", async () => {
    const states = await Effect.runPromise(Effect.gen(function*() {
      const batches = yield* makeBuyBatches
      yield* batches.offer(buy("a"))
      yield* batches.whenQueued
      yield* batches.whenQueued
      const first = names(yield* batches.next)
      const waiting = yield* Effect.fork(batches.whenQueued)
      yield* settle
      const waitsWhileEmpty = Option.isNone(yield* Fiber.poll(waiting))
      yield* batches.offer(buy("b"))
      yield* Fiber.join(waiting)
      return [first, waitsWhileEmpty, names(yield* batches.next)]
    }))
    expect(states).toEqual([["a"], true, ["b"]])
  })

  it("a wait interrupted as a buy arrives loses nothing: the buy stays queued", async () => {
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const batches = yield* makeBuyBatches
      const waiting = yield* Effect.fork(batches.whenQueued)
      yield* settle
      // the buy and the interruption in the same step, as at shutdown
      yield* batches.offer(buy("a"))
      yield* Fiber.interrupt(waiting)
      const afterInterruption = names(yield* batches.next)
      // a later wait sees later buys
      const next = yield* Effect.fork(batches.whenQueued)
      yield* batches.offer(buy("b"))
      yield* Fiber.join(next)
      return [afterInterruption, names(yield* batches.next)]
    }))
    expect(taken).toEqual([["a"], ["b"]])
  })

  it("several waits in turn, each closing the latch again, all see their buy", async () => {
    const taken = await Effect.runPromise(Effect.gen(function*() {
      const batches = yield* makeBuyBatches
      const seen: Array<ReadonlyArray<string>> = []
      for (let i = 0; i < 5; i++) {
        const waiting = yield* Effect.fork(batches.whenQueued)
        yield* settle
        yield* batches.offer(buy(`b${i}`))
        yield* Fiber.join(waiting)
        seen.push(names(yield* batches.next))
      }
      return seen
    }))
    expect(taken).toEqual([["b0"], ["b1"], ["b2"], ["b3"], ["b4"]])
  })
})
