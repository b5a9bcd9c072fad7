import { Deferred, Effect, Exit, Fiber, GlobalValue } from "effect"
import { describe, expect, it } from "vitest"
import { keepFiberRootsInArray } from "../../src/Ops/FiberRoots.js"

const rootsOfEffect = () => {
  const scope: unknown = GlobalValue.globalValue(Symbol.for("effect/FiberScope/Global"), () => undefined)
  return typeof scope === "object" && scope !== null && "roots" in scope ? scope.roots : undefined
}

describe("Effect's root fibers kept in an array", () => {
  it("replaces the Set Effect keeps them in, once", () => {
    expect(keepFiberRootsInArray()).toBe(true)
    expect(rootsOfEffect()).not.toBeInstanceOf(Set)
    expect(keepFiberRootsInArray()).toBe(true)
  })

  it("Fiber.roots still lists exactly the root fibers running, as they end in any order", async () => {
    keepFiberRootsInArray()
    const gates = Array.from({ length: 40 }, () => Effect.runSync(Deferred.make<void>()))
    const fibers = gates.map((gate) => Effect.runFork(Deferred.await(gate)))
    /** The indexes of this test's fibers among the roots. */
    const running = async () => new Set((await Effect.runPromise(Fiber.roots)).map((root) => fibers.findIndex((f) => f === root)).filter((i) => i >= 0))
    expect((await running()).size).toBe(40)
    // every third, then the first ten: ends in the middle, at the ends, and twice over one slot
    const ended = new Set([...fibers.keys()].filter((i) => i % 3 === 0 || i < 10))
    for (const i of ended) Effect.runSync(Deferred.done(gates[i]!, Exit.void))
    for (const i of ended) await Effect.runPromise(Fiber.join(fibers[i]!))
    expect(await running()).toEqual(new Set([...fibers.keys()].filter((i) => !ended.has(i))))
    for (const [i, gate] of gates.entries()) if (!ended.has(i)) Effect.runSync(Deferred.done(gate, Exit.void))
    await Effect.runPromise(Fiber.joinAll(fibers))
    expect((await running()).size).toBe(0)
  })
})
