/**
 * The simulated supplier market (src/Providers/Simulator/SupplierSim.ts): its snapshot is the
 * market as churn left it, so a supplier sync that restarts reconciles with what is on offer now:
 * the snapshot read after some churn equals the first snapshot with that churn's changes applied
 * (repriced items at their new price, delisted ones gone, new listings present).
 */
import { expect, layer } from "@effect/vitest"
import { Chunk, Effect, Layer, Stream } from "effect"
import { Settings } from "../../src/Config.js"
import { SupplierSimLive } from "../../src/Providers/Simulator/SupplierSim.js"
import { Supplier, type SupplierListing } from "../../src/Providers/Supplier.js"

// 200 changes in each 100 ms tick
const SupplierTest = Layer.provideMerge(SupplierSimLive, Settings.Test({ SIM_CATALOGUE_SIZE: "300", SIM_CHURN_PER_SECOND: "2000" }))

/** The snapshot's listings by id, with their prices. */
const offered = (snapshot: Stream.Stream<ReadonlyArray<SupplierListing>>) =>
  Effect.map(Stream.runCollect(snapshot), (pages) => {
    const byId = new Map<string, number>()
    for (const page of pages) for (const listing of page) byId.set(listing.item.id, listing.item.price)
    return byId
  })

layer(SupplierTest, { timeout: 30_000, excludeTestServices: true })("the simulated supplier's snapshot", (it) => {
  it.effect("is the market as churn left it", () =>
    Effect.gen(function*() {
      const supplier = yield* Supplier
      const expected = yield* offered(supplier.snapshot)
      expect(expected.size).toBe(300)

      const changes = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(supplier.changes, 1_000)))
      const kinds = { repriced: 0, delisted: 0, listed: 0 }
      for (const change of changes) {
        if (change.op === "remove") {
          expect(expected.delete(change.id)).toBe(true)
          kinds.delisted++
        } else {
          if (expected.has(change.listing.item.id)) kinds.repriced++
          else kinds.listed++
          expected.set(change.listing.item.id, change.listing.item.price)
        }
      }
      // the churn did all three kinds of change
      expect(kinds.repriced).toBeGreaterThan(100)
      expect(kinds.delisted).toBeGreaterThan(100)
      expect(kinds.listed).toBeGreaterThan(100)

      const now = yield* offered(supplier.snapshot)
      expect(now).toEqual(expected)
      expect(yield* supplier.size).toBe(expected.size)
    }))
})
