/**
 * Catalogue helpers of the black-box tests: generated admin items and the CatalogItem each must
 * become (spec 2.6, CONTRACT 6), loading through PUT /admin/catalogue/items, bounded polling, and
 * the feed's assertions. The feed client, the raw HTTP of the dump and `eventually` are in feed.ts
 * and polling.ts (also used by the chaos command, which runs without the test runner) and are
 * exported from here too.
 */
import * as fc from "fast-check"
import { randomBytes } from "node:crypto"
import * as http from "node:http"
import { expect } from "vitest"
import WebSocket from "ws"
import { ItemsUpserted } from "../../src/Ops/AdminApi.js"
import { bodyOf } from "./expectations.js"
import { feedUrl, rawGet } from "./feed.js"
import { eventually } from "./polling.js"
import type { RunningServer } from "./server.js"

export { applyChanges, type Change, Feed, feedUrl, rawGet, rawRequest, type RawResponse } from "./feed.js"
export { eventually } from "./polling.js"

// ---- the public item ---------------------------------------------------------------------------

export interface Sticker {
  readonly slot: number
  readonly name: string
  readonly sticker_id: string | null
  readonly image_url: string | null
  readonly wear: number | null
}

export interface Item {
  readonly id: string
  readonly market_hash_name: string
  readonly image_url: string | null
  readonly price: number
  readonly exterior: string | null
  readonly exterior_code: string | null
  readonly float: number | null
  readonly paint_seed: number | null
  readonly paint_index: number | null
  readonly inspect_url: string | null
  readonly asset_id: string | null
  readonly steam_id: string | null
  readonly class_id: string | null
  readonly instance_id: string | null
  readonly is_stat_trak: boolean
  readonly is_souvenir: boolean
  readonly has_stickers: boolean
  readonly stickers_count: number
  readonly stickers: ReadonlyArray<Sticker>
  readonly category: string | null
  readonly weapon_type: string | null
  readonly rarity: string | null
  readonly rarity_color: string | null
  readonly delivery_type: "instant" | "manual"
  readonly estimated_delivery_minutes: number | null
}

/** Every field of spec 2.6, each always present in list, search and stream upserts. */
export const ITEM_FIELDS = [
  "id",
  "market_hash_name",
  "image_url",
  "price",
  "exterior",
  "exterior_code",
  "float",
  "paint_seed",
  "paint_index",
  "inspect_url",
  "asset_id",
  "steam_id",
  "class_id",
  "instance_id",
  "is_stat_trak",
  "is_souvenir",
  "has_stickers",
  "stickers_count",
  "stickers",
  "category",
  "weapon_type",
  "rarity",
  "rarity_color",
  "delivery_type",
  "estimated_delivery_minutes"
] as const
const STICKER_FIELDS = ["image_url", "name", "slot", "sticker_id", "wear"]

/** Exactly the spec's fields, nothing else (no `sim`, no provider price), stickers an array. */
export const expectItemShape = (item: any) => {
  expect(Object.keys(item).sort()).toEqual([...ITEM_FIELDS].sort())
  expect(Array.isArray(item.stickers)).toBe(true)
  for (const s of item.stickers) expect(Object.keys(s).sort()).toEqual(STICKER_FIELDS)
}

/** An admin input: CatalogItem-shaped, some nullable fields omitted, maybe `sim` and extra fields. */
export type ItemInput = Record<string, unknown> & { readonly market_hash_name: string; readonly price: number }

/** The CatalogItem the API must answer for an input (CONTRACT 6: nulls for unknowns, exact values). */
export const expectedItem = (input: ItemInput, id: string): Item => {
  const get = <A>(key: string, fallback: A): A => (key in input ? input[key] as A : fallback)
  const stickers = get<ReadonlyArray<Record<string, unknown>>>("stickers", [])
  return {
    id,
    market_hash_name: input.market_hash_name,
    image_url: get("image_url", null),
    price: input.price,
    exterior: get("exterior", null),
    exterior_code: get("exterior_code", null),
    float: get("float", null),
    paint_seed: get("paint_seed", null),
    paint_index: get("paint_index", null),
    inspect_url: get("inspect_url", null),
    asset_id: get("asset_id", null),
    steam_id: get("steam_id", null),
    class_id: get("class_id", null),
    instance_id: get("instance_id", null),
    is_stat_trak: get("is_stat_trak", false),
    is_souvenir: get("is_souvenir", false),
    has_stickers: get("has_stickers", stickers.length > 0),
    stickers_count: get("stickers_count", stickers.length),
    stickers: stickers.map((s) => ({
      slot: s["slot"] as number,
      name: s["name"] as string,
      sticker_id: (s["sticker_id"] ?? null) as string | null,
      image_url: (s["image_url"] ?? null) as string | null,
      wear: (s["wear"] ?? null) as number | null
    })),
    category: get("category", null),
    weapon_type: get("weapon_type", null),
    rarity: get("rarity", null),
    rarity_color: get("rarity_color", null),
    delivery_type: input["delivery_type"] as "instant" | "manual",
    estimated_delivery_minutes: get("estimated_delivery_minutes", null)
  }
}

// ---- generated items ---------------------------------------------------------------------------

/** Duplicate names, case variants, a trailing space, characters that need URL encoding, Unicode. */
export const NAMES = [
  "AK-47 | Redline (Field-Tested)",
  "ak-47 | redline (field-tested)",
  "AK-47 | Redline (Field-Tested) ",
  "StatTrak™ AWP | Asiimov (Battle-Scarred)",
  "★ Karambit | Fade (Factory New)",
  "Sticker | Team & Co + \"100%\" / #1 ?x=y",
  "Operation Breakout Weapon Case",
  "名前 | ユニコード"
] as const
export const CATEGORIES = ["rifle", "knife", "sticker", "case", "sniper rifle"] as const
export const EXTERIORS = [["Factory New", "FN"], ["Minimal Wear", "MW"], ["Field-Tested", "FT"], ["Battle-Scarred", "BS"]] as const
export const RARITIES = [["Covert", "#eb4b4b"], ["Classified", "#d32ce6"], ["Mil-Spec Grade", "#4b69ff"]] as const
/** Prices many items share, so that ids break ties. */
export const COMMON_CENTS = [1, 99, 100, 250, 1999, 100_000] as const

const OMIT = Symbol("omit")
/** A nullable field: a value, null, or left out of the input (then null in the answer). */
const nullableField = <A>(arb: fc.Arbitrary<A>) =>
  fc.oneof({ weight: 3, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constant(OMIT) })
const digitsArb = (min: number, max: number) =>
  fc.array(fc.constantFrom(..."0123456789"), { minLength: min, maxLength: max }).map((d) => (d[0] === "0" ? "1" : "") + d.join(""))
const textArb = fc.string({ unit: "grapheme", maxLength: 30 })

const stickerArb = (slot: number, coverage: "name" | "full") =>
  coverage === "name"
    ? textArb.map((name) => ({ slot, name }))
    : fc.record({
      slot: fc.constant(slot),
      name: textArb,
      sticker_id: fc.option(digitsArb(1, 6), { nil: null }),
      image_url: fc.option(fc.webUrl(), { nil: null }),
      wear: fc.option(fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (x === 0 ? 0 : x)), { nil: null })
    })

const stickersArb = fc.oneof(
  fc.constant([] as Array<Record<string, unknown>>),
  ...(["name", "full"] as const).map((coverage) =>
    fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 }).chain((slots) =>
      fc.tuple(...slots.map((slot) => stickerArb(slot, coverage))).map((s) => s as Array<Record<string, unknown>>)
    )
  )
)

export const centsArb = fc.oneof(fc.constantFrom(...COMMON_CENTS), fc.integer({ min: 1, max: 9_999_999 }))

/** One admin input item; `id` present or left to the server. */
export const itemInputArb: fc.Arbitrary<ItemInput> = fc.record({
  id: fc.oneof({ weight: 5, arbitrary: fc.uuid() }, { weight: 1, arbitrary: fc.constant(OMIT) }),
  market_hash_name: fc.constantFrom(...NAMES),
  image_url: nullableField(fc.webUrl()),
  cents: centsArb,
  exterior: nullableField(fc.constantFrom(...EXTERIORS)),
  float: nullableField(fc.oneof(fc.constantFrom(0, 0.07, 0.15, 0.5, 1), fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (x === 0 ? 0 : x)))),
  paint_seed: nullableField(fc.integer({ min: 0, max: 1000 })),
  paint_index: nullableField(fc.integer({ min: 0, max: 1200 })),
  inspect_url: nullableField(fc.webUrl()),
  // beyond 2^53, as a string: must round-trip digit for digit
  asset_id: nullableField(fc.oneof(fc.bigInt({ min: 2n ** 53n + 1n, max: 10n ** 22n }).map(String), digitsArb(1, 12))),
  steam_id: nullableField(fc.bigInt({ min: 76561197960265729n, max: 76561202255233023n }).map(String)),
  class_id: nullableField(digitsArb(6, 12)),
  instance_id: nullableField(digitsArb(1, 12)),
  is_stat_trak: fc.oneof(fc.boolean(), fc.constant(OMIT)),
  is_souvenir: fc.oneof(fc.boolean(), fc.constant(OMIT)),
  stickers: fc.oneof(stickersArb, fc.constant(OMIT)),
  has_stickers: fc.oneof(fc.boolean(), fc.constant(OMIT)),
  stickers_count: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant(OMIT)),
  category: nullableField(fc.constantFrom(...CATEGORIES)),
  weapon_type: nullableField(fc.constantFrom("Rifle", "Knife", "Pistol")),
  rarity: nullableField(fc.constantFrom(...RARITIES)),
  delivery_type: fc.constantFrom("instant", "manual"),
  estimated_delivery_minutes: nullableField(fc.integer({ min: 0, max: 2000 })),
  // never exposed: the simulator's hint and provider economics
  extras: fc.oneof(
    fc.constant({}),
    fc.constant({ sim: { acquire: "unavailable" } }),
    fc.constant({ sim: { acquire: "price_changed" }, provider_price: 1.23, provider_id: "p1", markup: 0.07 })
  )
}).map((r) => {
  const out: Record<string, unknown> = {}
  const put = (key: string, value: unknown) => {
    if (value !== OMIT) out[key] = value
  }
  put("id", r.id)
  put("market_hash_name", r.market_hash_name)
  put("image_url", r.image_url)
  put("price", r.cents / 100)
  if (r.exterior !== OMIT) {
    out["exterior"] = r.exterior === null ? null : r.exterior[0]
    out["exterior_code"] = r.exterior === null ? null : r.exterior[1]
  }
  for (
    const key of [
      "float",
      "paint_seed",
      "paint_index",
      "inspect_url",
      "asset_id",
      "steam_id",
      "class_id",
      "instance_id",
      "is_stat_trak",
      "is_souvenir",
      "stickers",
      "has_stickers",
      "stickers_count",
      "category",
      "weapon_type"
    ] as const
  ) {
    put(key, r[key])
  }
  if (r.rarity !== OMIT) {
    out["rarity"] = r.rarity === null ? null : r.rarity[0]
    out["rarity_color"] = r.rarity === null ? null : r.rarity[1]
  }
  put("delivery_type", r.delivery_type)
  put("estimated_delivery_minutes", r.estimated_delivery_minutes)
  Object.assign(out, r.extras)
  return out as ItemInput
})

/** A simple complete item (for feed and dump tests), `size` bytes of image_url when asked. */
export const simpleItem = (id: string, cents: number, name = "AK-47 | Redline (Field-Tested)", imageBytes = 0): ItemInput => ({
  id,
  market_hash_name: name,
  price: cents / 100,
  image_url: imageBytes > 0 ? "https://img.example/" + randomText(imageBytes) : null,
  asset_id: "123456789012345678901",
  float: null,
  stickers: [],
  has_stickers: true,
  delivery_type: cents % 2 === 0 ? "instant" : "manual",
  sim: { acquire: "unavailable" }
})

/** Incompressible text of `n` characters (base64url of random bytes). */
export const randomText = (n: number) => randomBytes(Math.ceil(n * 3 / 4) + 3).toString("base64url").slice(0, n)

// ---- admin -------------------------------------------------------------------------------------

/**
 * PUT /admin/catalogue/items; the ids the server used, in order. A PUT of the same items is
 * idempotent, so a transport failure (a pooled keep-alive connection the server just closed) is
 * retried once. Raw on purpose: the inputs carry fields the admin schema does not declare
 * (provider economics), which a typed client would drop before sending.
 */
export const putItems = async (server: RunningServer, items: ReadonlyArray<ItemInput>): Promise<Array<string>> => {
  const put = () => server.admin("/admin/catalogue/items", { method: "PUT", body: { items } })
  const res = await put().catch(put).catch((error) => {
    throw new Error(`PUT /admin/catalogue/items: ${String(error)} (${String(error.cause)}); server output:\n${server.output().slice(-3000)}`)
  })
  if (res.status !== 200) throw new Error(`PUT /admin/catalogue/items: ${res.status} ${res.text.slice(0, 500)}`)
  const { ids, upserted } = bodyOf(res, ItemsUpserted)
  expect(upserted).toBe(items.length)
  return [...ids]
}

export const deleteItem = async (server: RunningServer, id: string) => {
  await server.adminApi.call((client) => client.catalogue.removeItem({ path: { id } }))
}

// ---- polling -----------------------------------------------------------------------------------

/**
 * The full dump once it answers 200 (it is built after start-up, and rebuilt after changes): the
 * response, its epoch and cursor headers and its parsed body.
 */
export const availableDump = async (server: RunningServer, key: string, timeoutMs = 60_000) => {
  const res = await eventually(
    async () => {
      const res = await rawGet(`${server.baseUrl}/api/v1/merchant/items/full-dump`, { authorization: `Bearer ${key}` })
      expect(res.status).toBe(200)
      return res
    },
    timeoutMs,
    200
  )
  const body: { readonly items_count: number; readonly items: ReadonlyArray<{ readonly id: string }> } = JSON.parse(res.body.toString())
  return { res, epoch: Number(res.headers["x-catalog-epoch"]), cursor: Number(res.headers["x-catalog-cursor"]), body }
}

/** A gauge of the ops listener's /metrics (e.g. catalogue_cursor). */
export const metric = async (server: RunningServer, name: string): Promise<number> => {
  const text = await fetch(`${server.opsUrl}/metrics`).then((r) => r.text())
  const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
  if (line === undefined) throw new Error(`metric ${name} not found`)
  return Number(line.slice(line.lastIndexOf(" ") + 1))
}

// ---- the realtime feed ---------------------------------------------------------------------------

/** An upgrade the server answers with an HTTP error before upgrading: its status and JSON body. */
export const refusedUpgrade = (
  server: RunningServer,
  query: string,
  headers: Record<string, string>
): Promise<{ status: number; json: unknown; headers: http.IncomingHttpHeaders }> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(feedUrl(server, query), { headers })
    ws.once("open", () => {
      ws.terminate()
      reject(new Error("the upgrade was accepted"))
    })
    ws.once("unexpected-response", (req, res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        req.destroy()
        const text = Buffer.concat(chunks).toString()
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          json = text
        }
        resolve({ status: res.statusCode ?? 0, json, headers: res.headers })
      })
    })
    ws.once("error", (e) => reject(e))
  })

/**
 * The messages of a feed are hello first, then changes whose cursors advance by exactly their
 * number of changes (gapless, strictly increasing), heartbeats at the current cursor.
 */
export const expectGaplessFeed = (messages: ReadonlyArray<any>, epoch: number, from: number) => {
  expect(messages[0]).toEqual({ type: "hello", epoch, cursor: from })
  let cursor = from
  for (const m of messages.slice(1)) {
    if (m.type === "changes") {
      expect(m.epoch).toBe(epoch)
      expect(m.changes.length).toBeGreaterThan(0)
      expect(m.cursor).toBe(cursor + m.changes.length)
      cursor = m.cursor
    } else if (m.type === "heartbeat") {
      expect(m).toEqual({ type: "heartbeat", epoch, cursor })
    } else {
      throw new Error(`unexpected message ${JSON.stringify(m).slice(0, 300)}`)
    }
  }
  return cursor
}
