/**
 * Synthetic CS2 listings, generated deterministically from (seed, index): weapons, knives, gloves,
 * stickers and cases, with wear names and codes, floats, paint seeds, StatTrak and souvenir flags,
 * stickers at the three coverage levels of spec 2.6, both delivery types and some nullable fields
 * null. Only an index is needed to rebuild a listing, so a million of them cost no memory.
 */
import type { Types } from "effect"
import type { CatalogItem, Sticker } from "../../Domain/CatalogItem.js"
import type { SupplierListing } from "../Supplier.js"

/** mulberry32: a small, fast, seedable PRNG. */
export const prng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

type Rng = () => number
const pick = <A>(rng: Rng, xs: ReadonlyArray<A>): A => xs[Math.floor(rng() * xs.length)]!

// Generated text is written into one scratch buffer and read back as one flat string: built a
// character at a time with `+=`, a 130-character URL was a chain of 130 string pieces, which made
// the listings the first sync's largest cost in time and garbage.
const scratch = Buffer.alloc(256)
const DIGITS = Buffer.from("0123456789", "latin1")
const HEX = Buffer.from("0123456789abcdef", "latin1")
const BASE64ISH = Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", "latin1")
// A draw has 32 random bits: it gives nine decimal digits, or five characters of a 64-character
// alphabet. With a draw a character, 100,000 listings took 500-660 ms to make; now 280-430.
/** `n` decimal digits, the first not 0. */
const digits = (rng: Rng, n: number) => {
  scratch[0] = DIGITS[1 + Math.floor(rng() * 9)]!
  for (let i = 1; i < n; i += 9) {
    let draw = Math.floor(rng() * 1e9)
    for (let k = 0; k < 9 && i + k < n; k++) {
      scratch[i + k] = DIGITS[draw % 10]!
      draw = Math.floor(draw / 10)
    }
  }
  return scratch.toString("latin1", 0, n)
}
/** `n` characters of BASE64ISH. */
const base64ish = (rng: Rng, n: number) => {
  for (let i = 0; i < n; i += 5) {
    let draw = Math.floor(rng() * 4294967296)
    for (let k = 0; k < 5 && i + k < n; k++) {
      scratch[i + k] = BASE64ISH[draw & 63]!
      draw >>>= 6
    }
  }
  return scratch.toString("latin1", 0, n)
}

/**
 * A v4-shaped uuid from the generator, written with its dashes and read back as one flat string:
 * joined from five slices, an id was a chain of string pieces, and a first sync of 100,000 listings
 * allocated 65 MB making ids (27 MB now, mostly the draws).
 */
export const uuidFrom = (rng: Rng): string => {
  let at = 0
  for (let i = 0; i < 32; i++) {
    if (i === 8 || i === 12 || i === 16 || i === 20) scratch[at++] = 0x2d // "-"
    scratch[at++] = HEX[Math.floor(rng() * 16)]!
  }
  scratch[14] = 0x34 // the version: "4"
  scratch[19] = HEX[8 + Math.floor(rng() * 4)]! // the variant: 8, 9, a or b
  return scratch.toString("latin1", 0, 36)
}

const RARITIES = [
  ["Consumer Grade", "#b0c3d9"],
  ["Industrial Grade", "#5e98d9"],
  ["Mil-Spec Grade", "#4b69ff"],
  ["Restricted", "#8847ff"],
  ["Classified", "#d32ce6"],
  ["Covert", "#eb4b4b"]
] as const

/** Stickers are never of the two lowest grades. */
const STICKER_RARITIES = RARITIES.slice(2)

const EXTERIORS = [
  ["Factory New", "FN", 0, 0.07],
  ["Minimal Wear", "MW", 0.07, 0.15],
  ["Field-Tested", "FT", 0.15, 0.38],
  ["Well-Worn", "WW", 0.38, 0.45],
  ["Battle-Scarred", "BS", 0.45, 1]
] as const

const WEAPONS: ReadonlyArray<readonly [string, string, string]> = [
  ["AK-47", "rifle", "Rifle"],
  ["M4A4", "rifle", "Rifle"],
  ["M4A1-S", "rifle", "Rifle"],
  ["AUG", "rifle", "Rifle"],
  ["SG 553", "rifle", "Rifle"],
  ["FAMAS", "rifle", "Rifle"],
  ["Galil AR", "rifle", "Rifle"],
  ["AWP", "sniper rifle", "Sniper Rifle"],
  ["SSG 08", "sniper rifle", "Sniper Rifle"],
  ["Desert Eagle", "pistol", "Pistol"],
  ["Glock-18", "pistol", "Pistol"],
  ["USP-S", "pistol", "Pistol"],
  ["P250", "pistol", "Pistol"],
  ["Five-SeveN", "pistol", "Pistol"],
  ["Tec-9", "pistol", "Pistol"],
  ["MP9", "smg", "SMG"],
  ["MAC-10", "smg", "SMG"],
  ["P90", "smg", "SMG"],
  ["UMP-45", "smg", "SMG"],
  ["Nova", "shotgun", "Shotgun"],
  ["XM1014", "shotgun", "Shotgun"],
  ["Negev", "machinegun", "Machinegun"]
]
const KNIVES = ["Karambit", "Butterfly Knife", "M9 Bayonet", "Bayonet", "Flip Knife", "Talon Knife", "Skeleton Knife", "Huntsman Knife"]
const GLOVES = ["Sport Gloves", "Driver Gloves", "Specialist Gloves", "Moto Gloves", "Hand Wraps"]
const FINISHES = [
  "Redline",
  "Asiimov",
  "Vulcan",
  "Fire Serpent",
  "Hyper Beast",
  "Neo-Noir",
  "Printstream",
  "Bloodsport",
  "Case Hardened",
  "Slate",
  "Fade",
  "Doppler",
  "Tiger Tooth",
  "Marble Fade",
  "Crimson Web",
  "Night",
  "Dragon Lore",
  "Howl",
  "The Emperor",
  "Desolate Space",
  "Cyrex",
  "Mecha Industries",
  "Kill Confirmed",
  "Blaze",
  "Golden Koi",
  "Fuel Injector",
  "Wasteland Rebel",
  "Safari Mesh",
  "Boreal Forest",
  "Urban Masked",
  "Phantom Disruptor",
  "Head Shot",
  "Nightwish",
  "Ice Coaled",
  "Temukau",
  "Chromatic Aberration"
]
const GLOVE_FINISHES = ["Pandora's Box", "Vice", "Hedge Maze", "King Snake", "Crimson Kimono", "Fade", "Spearmint", "Cool Mint"]
const STICKER_TEAMS = ["Natus Vincere", "FaZe Clan", "Team Vitality", "G2 Esports", "Astralis", "Team Spirit", "MOUZ", "Cloud9", "Heroic", "ENCE"]
const STICKER_EVENTS = ["Katowice 2014", "Cologne 2015", "Boston 2018", "Stockholm 2021", "Antwerp 2022", "Paris 2023", "Copenhagen 2024", "Shanghai 2024"]
const STICKER_KINDS = ["", " (Holo)", " (Foil)", " (Glitter)", " (Gold)"]
const CASES = [
  "Revolution Case",
  "Recoil Case",
  "Dreams & Nightmares Case",
  "Fracture Case",
  "Prisma 2 Case",
  "Clutch Case",
  "Snakebite Case",
  "Kilowatt Case",
  "Gallery Case",
  "Chroma 3 Case",
  "Spectrum 2 Case",
  "Danger Zone Case"
]

const CDN = "https://community.cloudflare.steamstatic.com/economy/image/"

/** A log-normal-ish price in cents around `median` dollars, at least 3 cents. */
const priceCents = (rng: Rng, median: number) => Math.max(3, Math.round(median * 100 * Math.exp((rng() + rng() + rng() - 1.5) * 1.6)))

const stickersFor = (rng: Rng): { has: boolean; count: number; stickers: Array<Sticker> } => {
  if (rng() < 0.7) return { has: false, count: 0, stickers: [] }
  const count = 1 + Math.floor(rng() * 4)
  const coverage = rng()
  const stickers: Array<Sticker> = []
  // three coverage levels: full detail, name only, none at all (flags arrive before details)
  if (coverage < 0.5 || coverage >= 0.8) {
    for (let slot = 0; slot < count; slot++) {
      const name = `Sticker | ${pick(rng, STICKER_TEAMS)}${pick(rng, STICKER_KINDS)} | ${pick(rng, STICKER_EVENTS)}`
      stickers.push(
        coverage < 0.5
          ? { slot, name, sticker_id: digits(rng, 4), image_url: CDN + base64ish(rng, 60), wear: Math.round(rng() * 1000) / 1000 }
          : { slot, name, sticker_id: null, image_url: null, wear: null }
      )
    }
  }
  return { has: true, count, stickers }
}

/** The listing number `index` of the synthetic catalogue with this seed. */
export const syntheticListing = (seed: number, index: number): SupplierListing => {
  const rng = prng((seed * 2654435761 + index * 40503) >>> 0)
  const id = uuidFrom(rng)
  const kind = rng()
  const assetId = digits(rng, 17 + Math.floor(rng() * 3)) // often beyond 2^53
  const holder = rng() < 0.12 ? `7656119${digits(rng, 10)}` : null
  const deliveryInstant = rng() < 0.65
  const minutes = rng() < 0.1 ? null : deliveryInstant ? 5 + Math.floor(rng() * 20) : 30 + Math.floor(rng() * 700)
  // One object literal with every field, then the kind's fields set: built by spreading a base
  // object into each kind's literal, an item took ten times as long to make (about 25 µs) and to collect.
  const item: Types.Mutable<CatalogItem> = {
    id,
    image_url: rng() < 0.03 ? null : CDN + base64ish(rng, 96 + Math.floor(rng() * 40)),
    asset_id: rng() < 0.02 ? null : assetId,
    steam_id: holder,
    class_id: digits(rng, 9 + Math.floor(rng() * 2)),
    instance_id: rng() < 0.2 ? "0" : digits(rng, 9 + Math.floor(rng() * 2)),
    delivery_type: deliveryInstant ? "instant" : "manual",
    estimated_delivery_minutes: minutes,
    market_hash_name: "",
    price: 0,
    exterior: null,
    exterior_code: null,
    float: null,
    paint_seed: null,
    paint_index: null,
    inspect_url: null,
    is_stat_trak: false,
    is_souvenir: false,
    has_stickers: false,
    stickers_count: 0,
    stickers: [],
    category: null,
    weapon_type: null,
    rarity: null,
    rarity_color: null
  }
  let median: number
  if (kind < 0.1) {
    item.market_hash_name = pick(rng, CASES)
    median = 0.8
    item.category = "case"
    item.rarity = "Base Grade"
    item.rarity_color = "#b0c3d9"
  } else if (kind < 0.22) {
    item.market_hash_name = `Sticker | ${pick(rng, STICKER_TEAMS)}${pick(rng, STICKER_KINDS)} | ${pick(rng, STICKER_EVENTS)}`
    const [rarity, color] = pick(rng, STICKER_RARITIES)
    median = 2.5
    item.category = "sticker"
    item.rarity = rarity
    item.rarity_color = color
  } else {
    const roll = rng()
    const isKnife = roll < 0.08
    const isGloves = !isKnife && roll < 0.12
    const [exterior, code, lo, hi] = pick(rng, EXTERIORS)
    const float = Math.round((lo + rng() * (hi - lo)) * 1e12) / 1e12
    const statTrak = !isGloves && rng() < 0.15
    const souvenir = !statTrak && !isKnife && !isGloves && rng() < 0.04
    const stickers = isKnife || isGloves ? { has: false, count: 0, stickers: [] } : stickersFor(rng)
    const [weapon, category, weaponType] = isKnife
      ? [pick(rng, KNIVES), "knife", "Knife"]
      : isGloves
      ? [pick(rng, GLOVES), "gloves", "Gloves"]
      : pick(rng, WEAPONS)
    const finish = isGloves ? pick(rng, GLOVE_FINISHES) : pick(rng, FINISHES)
    const star = isKnife || isGloves ? "★ " : ""
    item.market_hash_name = `${star}${statTrak ? "StatTrak™ " : ""}${souvenir ? "Souvenir " : ""}${weapon} | ${finish} (${exterior})`
    const [rarity, color] = isKnife || isGloves ? ["Covert", "#eb4b4b"] as const : pick(rng, RARITIES)
    median = isKnife ? 250 : isGloves ? 180 : 6
    const paintSeed = Math.floor(rng() * 1001)
    item.exterior = exterior
    item.exterior_code = code
    item.float = rng() < 0.05 ? null : float
    item.paint_seed = paintSeed
    item.paint_index = 1 + Math.floor(rng() * 1200)
    item.inspect_url = item.asset_id === null
      ? null
      : `steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20S${holder ?? "76561198" + digits(rng, 9)}A${assetId}D${digits(rng, 19)}`
    item.is_stat_trak = statTrak
    item.is_souvenir = souvenir
    item.has_stickers = stickers.has
    item.stickers_count = stickers.count
    item.stickers = stickers.stickers
    item.category = category
    item.weapon_type = weaponType
    item.rarity = rarity
    item.rarity_color = rng() < 0.05 ? null : color
  }
  const providerPriceCents = priceCents(rng, median)
  item.price = markup(providerPriceCents) / 100
  return { item, providerPriceCents, sim: undefined }
}

/** Our price: the provider's plus a 7 % markup, rounded up to the cent. */
export const markup = (providerPriceCents: number): number => Math.ceil(providerPriceCents * 107 / 100)
