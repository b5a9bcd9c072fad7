/**
 * Reading the catalogue's full dump in the black-box tests (spec 2.6, 2.7, 4.2): its address, a gzip
 * download decoded and checked for the headers every 200 carries, its items with the nullable
 * fields a dump may leave out filled in (and nothing unknown), and waiting for a rebuilt dump.
 */
import * as zlib from "node:zlib"
import { expect } from "vitest"
import { eventually, type Item, ITEM_FIELDS, rawGet, type RawResponse } from "./catalogue.js"
import type { RunningServer } from "./server.js"

/** Fields a dump may leave out when null (spec 2.6); the required ones are always there. */
const REQUIRED = ["id", "market_hash_name", "price", "delivery_type", "is_stat_trak", "is_souvenir", "has_stickers", "stickers_count", "stickers"]

/** A dump item with omitted nullable fields filled in with null, checked for unknown fields. */
export const normaliseDumpItem = (item: Record<string, unknown>): Item => {
  for (const key of Object.keys(item)) expect(ITEM_FIELDS as ReadonlyArray<string>).toContain(key)
  for (const key of REQUIRED) expect(item).toHaveProperty(key)
  expect(Array.isArray(item["stickers"])).toBe(true)
  const out: Record<string, unknown> = {}
  for (const key of ITEM_FIELDS) out[key] = key in item ? item[key] : null
  return out as unknown as Item
}

export interface Dump {
  readonly res: RawResponse
  readonly etag: string
  readonly cursor: number
  readonly epoch: number
  readonly body: { generated_at: string; items_count: number; items: Array<Record<string, unknown>> }
  readonly items: Map<string, Item>
}

export const fullDumpUrl = (server: RunningServer) => `${server.baseUrl}/api/v1/merchant/items/full-dump`

/** A gzip dump, decoded and checked for the headers every 200 carries. */
export const gzipDump = async (server: RunningServer, key: string): Promise<Dump> => {
  const res = await rawGet(fullDumpUrl(server), { authorization: `Bearer ${key}`, "accept-encoding": "gzip" })
  expect(res.status, res.body.toString().slice(0, 300)).toBe(200)
  expect(res.headers["content-encoding"]).toBe("gzip")
  expect(res.body.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]))
  const body = JSON.parse(zlib.gunzipSync(res.body).toString("utf8"))
  expect(res.headers["etag"]).toMatch(/^W\/"[^"]+"$/)
  expect(res.headers["x-catalog-cursor"]).toMatch(/^\d+$/)
  expect(res.headers["x-catalog-epoch"]).toMatch(/^\d+$/)
  expect(Number(res.headers["x-items-count"])).toBe(body.items.length)
  expect(body.items_count).toBe(body.items.length)
  const items = new Map<string, Item>()
  for (const raw of body.items) {
    const item = normaliseDumpItem(raw)
    expect(items.has(item.id)).toBe(false)
    items.set(item.id, item)
  }
  return { res, etag: res.headers["etag"]!, cursor: Number(res.headers["x-catalog-cursor"]), epoch: Number(res.headers["x-catalog-epoch"]), body, items }
}

/** Waits for a regenerated dump that satisfies `check` (with DUMP_INTERVAL_SECONDS=1, one a second). */
export const dumpWhere = (server: RunningServer, key: string, check: (d: Dump) => void) =>
  eventually(
    async () => {
      const d = await gzipDump(server, key)
      check(d)
      return d
    },
    60_000,
    200
  )

/** The same ids, each with the same item. */
export const expectSameItems = (got: ReadonlyMap<string, unknown>, want: ReadonlyMap<string, unknown>) => {
  expect([...got.keys()].sort()).toEqual([...want.keys()].sort())
  for (const [id, item] of want) expect(got.get(id)).toEqual(item)
}
