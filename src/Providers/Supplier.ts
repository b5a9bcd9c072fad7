/**
 * The supplier market port: the catalogue feed (a full snapshot and a stream of changes) and, for
 * purchases, item acquisition and top-ups. The simulator implements it in test mode; a real
 * adapter implements the same interface.
 */
import { Context, type Effect, type Stream } from "effect"
import type { CatalogItem, SimHints } from "../Domain/CatalogItem.js"

export interface SupplierListing {
  readonly item: CatalogItem
  /** What the supplier charges us; never exposed. */
  readonly providerPriceCents: number
  /** Test-mode hints (CONTRACT 5.3); never exposed. */
  readonly sim: SimHints | undefined
}

export type SupplierChange =
  | { readonly op: "upsert"; readonly listing: SupplierListing }
  | { readonly op: "remove"; readonly id: string }

export interface SupplierCatalogue {
  /** The supplier's whole catalogue, in pages. */
  readonly snapshot: Stream.Stream<ReadonlyArray<SupplierListing>>
  /** Changes after the snapshot: price changes, delistings, new listings. */
  readonly changes: Stream.Stream<SupplierChange>
  /** How many listings the snapshot holds (for logs and readiness). */
  readonly size: Effect.Effect<number>
}

export class Supplier extends Context.Tag("Supplier")<Supplier, SupplierCatalogue>() {}
