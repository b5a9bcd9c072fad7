/**
 * The simulator's listings with names that the database's encodings must carry intact: what
 * COPY's text format escapes, what an array literal quotes, control characters and characters
 * beyond ASCII (the tests of a first reconciliation's bulk writes).
 */
import { syntheticListing } from "../../src/Providers/Simulator/Listings.js"
import type { SupplierListing } from "../../src/Providers/Supplier.js"

export const TRICKY_NAMES = ["★ Karambit | Doppler (Factory New)", "back\\slash \\N", "tab\tand\nline\r\nend", "\"quoted\" ™ 𝄞", "ends \\", "{braces, commas}"]

/**
 * `count` listings of the simulator's catalogue `seed`: the first two rounds of TRICKY_NAMES as
 * their names and sticker names, every other one of those with sim hints.
 */
export const listingsWithTrickyNames = (seed: number, count: number): ReadonlyArray<SupplierListing> =>
  Array.from({ length: count }, (_, i) => {
    const listing = syntheticListing(seed, i)
    if (i >= TRICKY_NAMES.length * 2) return listing
    const name = TRICKY_NAMES[i % TRICKY_NAMES.length]!
    return {
      ...listing,
      item: {
        ...listing.item,
        market_hash_name: name,
        stickers: [{ slot: 0, name, sticker_id: null, image_url: null, wear: null }],
        has_stickers: true,
        stickers_count: 1
      },
      sim: i % 2 === 0 ? { acquire: "unavailable" } : undefined
    }
  })
