/**
 * forEachInSlices (src/Catalogue/EventLoop.ts): every item applied once, in order; a slice ends
 * once its time is spent (at least one item each); the event loop runs between slices, never
 * inside one.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { forEachInSlices } from "../../src/Catalogue/EventLoop.js"

it.live("applies every item once, in order, in slices of the given time, with the event loop's turns between them", () =>
  Effect.gen(function*() {
    const items = Array.from({ length: 10 }, (_, i) => i)
    // a clock that advances 4 ms per reading: a slice of 10 ms holds 3 items (read at 0, 4, 8, 12)
    let clock = 0
    const now = () => (clock += 4)
    const log: Array<string> = []
    let turns = 0
    const scheduleTurn = () =>
      setImmediate(() => {
        turns++
        log.push(`turn ${turns}`)
        if (turns < 10) scheduleTurn()
      })
    scheduleTurn()
    const slices: Array<readonly [number, number]> = []
    yield* forEachInSlices(items, {
      sliceMs: 10,
      now,
      apply: (item) => log.push(`item ${item}`),
      sliceDone: (from, to) => {
        slices.push([from, to])
        log.push(`slice ${from}-${to}`)
      }
    })
    expect(log.filter((l) => l.startsWith("item"))).toEqual(items.map((i) => `item ${i}`))
    expect(slices).toEqual([[0, 3], [3, 6], [6, 9], [9, 10]])
    // between two slices the event loop had a turn; within a slice it had none
    for (let s = 1; s < slices.length; s++) {
      const between = log.slice(log.indexOf(`slice ${slices[s - 1]![0]}-${slices[s - 1]![1]}`), log.indexOf(`item ${slices[s]![0]}`))
      expect(between.some((l) => l.startsWith("turn"))).toBe(true)
    }
    for (const [from, to] of slices) {
      const within = log.slice(log.indexOf(`item ${from}`), log.indexOf(`slice ${from}-${to}`))
      expect(within.some((l) => l.startsWith("turn"))).toBe(false)
    }
  }))

it.live("a slice holds at least one item, however slow", () =>
  Effect.gen(function*() {
    let clock = 0
    const slices: Array<readonly [number, number]> = []
    yield* forEachInSlices(["a", "b", "c"], { sliceMs: 1, now: () => (clock += 100), apply: () => undefined, sliceDone: (from, to) => slices.push([from, to]) })
    expect(slices).toEqual([[0, 1], [1, 2], [2, 3]])
  }))
