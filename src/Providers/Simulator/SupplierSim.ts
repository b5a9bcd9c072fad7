/**
 * The simulated supplier market's catalogue (CONTRACT 1, 5.3): the synthetic catalogue of
 * SIM_CATALOGUE_SIZE listings, or the fixture file SIM_CATALOGUE, and churn at
 * SIM_CHURN_PER_SECOND (price changes, delistings, new listings).
 */
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { Settings } from "../../Config.js"
import { CatalogItemInput } from "../../Domain/CatalogItem.js"
import { centsCeil } from "../../Domain/Money.js"
import { Supplier, type SupplierChange, type SupplierListing } from "../Supplier.js"
import { prng, syntheticListing } from "./Listings.js"

const SEED = 730
const PAGE = 1_000
/** Churn is emitted in ticks of this length, several changes a tick at high rates. */
const TICK_MS = 100

/** A fixture item without an id gets a stable one: the same file gives the same ids. */
const fixtureId = (index: number, name: string) => {
  const h = createHash("sha256").update(`fixture:${index}:${name}`).digest("hex")
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${"89ab"[parseInt(h[16]!, 16) % 4]}${h.slice(17, 20)}-${h.slice(20, 32)}`
}

export const loadFixture = (path: string): ReadonlyArray<SupplierListing> => {
  const raw: unknown = JSON.parse(readFileSync(path, "utf8"))
  const inputs = Schema.decodeUnknownSync(Schema.Array(CatalogItemInput))(raw)
  return inputs.map((input, index) => {
    const { sim, id, has_stickers, stickers_count, ...rest } = input
    const priceCents = centsCeil(input.price)
    return {
      item: {
        ...rest,
        id: id ?? fixtureId(index, input.market_hash_name),
        price: priceCents / 100,
        has_stickers: has_stickers ?? input.stickers.length > 0,
        stickers_count: stickers_count ?? input.stickers.length
      },
      providerPriceCents: Math.floor(priceCents * 100 / 107),
      sim
    }
  })
}

/** The simulated market as churn left it: what its snapshot and its changes are of. */
interface Market {
  readonly listing: (index: number) => SupplierListing
  /** Listings ever offered: the initial ones, then the new ones churn added. */
  count: number
  readonly removed: Set<number>
  /** Current price in cents of the listings churn repriced. */
  readonly prices: Map<number, number>
}

/** Listing `index` at its current price. */
const currentListing = (market: Market, index: number): SupplierListing => {
  const base = market.listing(index)
  const cents = market.prices.get(index)
  return cents === undefined ? base : { ...base, item: { ...base.item, price: cents / 100 }, providerPriceCents: Math.floor(cents * 100 / 107) }
}

/**
 * The listings on offer now, in pages. Read when consumed, not when built: a sync that restarts
 * reconciles with the market as churn left it (it used to get the initial catalogue back, which
 * relisted what churn had delisted, delisted what it had added, and undid its prices).
 */
const snapshotOf = (market: Market): Stream.Stream<ReadonlyArray<SupplierListing>> =>
  Stream.suspend(() => {
    const count = market.count
    // one page per chunk: a page is made when the sync asks for it and is garbage once applied (the
    // default chunk of 4,096 made every page at once and kept them all until the last was applied)
    return Stream.range(0, Math.max(0, Math.ceil(count / PAGE) - 1), 1).pipe(
      Stream.map((page) => {
        const out: Array<SupplierListing> = []
        for (let i = page * PAGE; i < Math.min(count, (page + 1) * PAGE); i++) {
          if (!market.removed.has(i)) out.push(currentListing(market, i))
        }
        return out
      }),
      Stream.filter((page) => page.length > 0)
    )
  })

const churn = (market: Market, perSecond: number, canGrow: boolean): Stream.Stream<SupplierChange> => {
  if (perSecond <= 0 || market.count === 0) return Stream.never
  const rng = prng(SEED + 1)
  const perTick = perSecond * TICK_MS / 1000
  let owed = 0
  const randomLive = () => {
    for (let tries = 0; tries < 20; tries++) {
      const index = Math.floor(rng() * market.count)
      if (!market.removed.has(index)) return index
    }
    return undefined
  }
  const next = (): SupplierChange | undefined => {
    const roll = rng()
    if (roll < 0.5 || (!canGrow && roll >= 0.75)) {
      const index = randomLive()
      if (index === undefined) return undefined
      const current = currentListing(market, index)
      const cents = Math.max(3, Math.round(current.item.price * 100 * (0.9 + rng() * 0.2)))
      market.prices.set(index, cents)
      return { op: "upsert", listing: currentListing(market, index) }
    }
    if (roll < 0.75) {
      const index = randomLive()
      if (index === undefined) return undefined
      market.removed.add(index)
      return { op: "remove", id: market.listing(index).item.id }
    }
    const index = market.count++
    return { op: "upsert", listing: market.listing(index) }
  }
  return Stream.repeatEffect(Effect.gen(function*() {
    yield* Effect.sleep(TICK_MS)
    owed += perTick
    const changes: Array<SupplierChange> = []
    while (owed >= 1) {
      owed -= 1
      const change = next()
      if (change !== undefined) changes.push(change)
    }
    return Chunk.fromIterable(changes)
  })).pipe(Stream.flattenChunks)
}

export const SupplierSimLive = Layer.effect(
  Supplier,
  Effect.gen(function*() {
    const settings = yield* Settings
    const fixture = settings.simCatalogue._tag === "Some" ? loadFixture(settings.simCatalogue.value) : undefined
    const size = fixture?.length ?? settings.simCatalogueSize
    const listing = fixture !== undefined ? (index: number) => fixture[index]! : (index: number) => syntheticListing(SEED, index)
    const market: Market = { listing, count: size, removed: new Set(), prices: new Map() }
    // A fixture's catalogue cannot grow: new listings come only from the synthetic generator.
    const canGrow = fixture === undefined

    const changes = churn(market, settings.simChurnPerSecond, canGrow)
    return { snapshot: snapshotOf(market), changes, size: Effect.sync(() => market.count - market.removed.size) }
  })
)
