/**
 * src/Db/Batches.ts: calls that arrive while batches run are gathered into the next batch, never
 * more batches at once than allowed, incompatible calls wait for a later batch, each call gets its
 * own output, and a failed batch fails its calls only.
 */
import { describe, expect, it } from "vitest"
import { batches } from "../../src/Db/Batches.js"

/** A `run` whose batches are recorded and finish only when released, one by one. */
const controlledRun = () => {
  const started: Array<ReadonlyArray<number>> = []
  const pending: Array<{ readonly resolve: () => void; readonly reject: (error: unknown) => void }> = []
  let running = 0
  let mostRunning = 0
  const run = (inputs: ReadonlyArray<number>) =>
    new Promise<ReadonlyArray<string>>((resolve, reject) => {
      started.push(inputs)
      running++
      mostRunning = Math.max(mostRunning, running)
      pending.push({
        resolve: () => {
          running--
          resolve(inputs.map((n) => `out-${n}`))
        },
        reject: (error) => {
          running--
          reject(error)
        }
      })
    })
  return { run, started, pending, mostRunning: () => mostRunning }
}

const turn = () => new Promise((resolve) => setImmediate(resolve))

const anyPair = () => true

describe("batches", () => {
  it("runs a lone call at once, then gathers the calls made meanwhile into the next batch", async () => {
    const c = controlledRun()
    const call = batches(c.run, { maxInFlight: 1, maxBatch: 10, compatible: anyPair })
    const first = call(1)
    await turn()
    expect(c.started).toEqual([[1]])
    const rest = [2, 3, 4].map(call)
    await turn()
    expect(c.started).toHaveLength(1) // the one allowed batch is still running
    c.pending[0]!.resolve()
    expect(await first).toBe("out-1")
    await turn()
    expect(c.started).toEqual([[1], [2, 3, 4]])
    c.pending[1]!.resolve()
    expect(await Promise.all(rest)).toEqual(["out-2", "out-3", "out-4"])
  })

  it("gathers the calls of one turn of the event loop, runs at most maxInFlight batches of at most maxBatch", async () => {
    const c = controlledRun()
    const call = batches(c.run, { maxInFlight: 2, maxBatch: 3, compatible: anyPair })
    const outputs = Promise.all(Array.from({ length: 10 }, (_, i) => call(i)))
    await turn()
    expect(c.started).toEqual([[0, 1, 2], [3, 4, 5]])
    c.pending[1]!.resolve()
    await turn()
    expect(c.started).toEqual([[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    c.pending[0]!.resolve()
    await turn()
    expect(c.started).toEqual([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]])
    c.pending[2]!.resolve()
    c.pending[3]!.resolve()
    expect(await outputs).toEqual(Array.from({ length: 10 }, (_, i) => `out-${i}`))
    expect(c.mostRunning()).toBe(2)
  })

  it("keeps a call out of a batch it may not join, for a later one, in its order", async () => {
    const c = controlledRun()
    // calls of the same parity may not share a batch
    const call = batches(c.run, { maxInFlight: 1, maxBatch: 10, compatible: (batch, n) => batch.every((m) => m % 2 !== n % 2) })
    const outputs = Promise.all([1, 3, 5, 2, 4].map(call))
    await turn()
    expect(c.started).toEqual([[1, 2]])
    c.pending[0]!.resolve()
    await turn()
    expect(c.started).toEqual([[1, 2], [3, 4]])
    c.pending[1]!.resolve()
    await turn()
    expect(c.started).toEqual([[1, 2], [3, 4], [5]])
    c.pending[2]!.resolve()
    expect(await outputs).toEqual(["out-1", "out-3", "out-5", "out-2", "out-4"])
  })

  it("fails every call of a failed batch with its error, and goes on with the next", async () => {
    const c = controlledRun()
    const call = batches(c.run, { maxInFlight: 1, maxBatch: 10, compatible: anyPair })
    const failed = [call(1), call(2)].map((p) => p.then(() => "resolved", (e: Error) => e.message))
    await turn()
    const later = call(3)
    c.pending[0]!.reject(new Error("connection lost"))
    expect(await Promise.all(failed)).toEqual(["connection lost", "connection lost"])
    await turn()
    expect(c.started).toEqual([[1, 2], [3]])
    c.pending[1]!.resolve()
    expect(await later).toBe("out-3")
  })

  it("fails the calls of a batch whose run throws at once", async () => {
    const call = batches<number, string>(() => {
      throw new Error("bad statement")
    }, { maxInFlight: 1, maxBatch: 10, compatible: anyPair })
    await expect(call(1)).rejects.toThrow("bad statement")
    await expect(call(2)).rejects.toThrow("bad statement")
  })
})
