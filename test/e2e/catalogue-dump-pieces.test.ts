/**
 * The full dump built in pieces (spec 4.2): with every dump read from its file, a catalogue of 5,000
 * items is four pieces grouped by id prefix; a change rebuilds only its piece, the others are reused,
 * and the combined gzip still decodes to exactly the live catalogue, a removal included.
 */
import { randomUUID } from "node:crypto"
import * as zlib from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { deleteItem, eventually, putItems, rawGet, simpleItem } from "../support/catalogue.js"
import { type RunningServer, startServer } from "../support/server.js"

describe("catalogue full dump of several pieces", () => {
  const ITEMS = 5_000 // four pieces of about 1,250 items (grouped by id prefix)
  let server: RunningServer
  let key: string
  beforeAll(async () => {
    server = await startServer({
      // every dump read from its file (the other server's are sent from memory)
      env: { SIM_CATALOGUE_SIZE: "0", SIM_CHURN_PER_SECOND: "0", DUMP_INTERVAL_SECONDS: "1", DUMP_MEMORY_MAX_MB: "0", LOG_LEVEL: "info" }
    })
    key = (await server.createMerchant()).apiKey
  })
  afterAll(async () => {
    await server?.stop()
  })

  /** The "catalogue dump built" log lines so far. */
  const builds = () =>
    server.output().split("\n").flatMap((line) => {
      if (!line.includes("catalogue dump built")) return []
      const annotations = JSON.parse(line).annotations
      return [{ items: Number(annotations.items), pieces: Number(annotations.pieces), reused: Number(annotations.pieces_reused) }]
    })

  const gzipDump = async () => {
    const res = await rawGet(`${server.baseUrl}/api/v1/merchant/items/full-dump`, { authorization: `Bearer ${key}`, "accept-encoding": "gzip" })
    expect(res.status).toBe(200)
    // gunzip checks the trailer: the CRC-32 combined from the pieces' and the length
    const body = JSON.parse(zlib.gunzipSync(res.body).toString("utf8"))
    expect(body.items_count).toBe(body.items.length)
    return new Map<string, Record<string, unknown>>(body.items.map((item: Record<string, unknown>) => [String(item["id"]), item]))
  }

  it("reuses the pieces whose items did not change, and still gives exactly the live catalogue", async () => {
    const ids = Array.from({ length: ITEMS }, () => randomUUID())
    await putItems(server, ids.map((id, i) => simpleItem(id, 100 + i)))
    const first = await eventually(
      async () => {
        const items = await gzipDump()
        expect(items.size).toBe(ITEMS)
        return items
      },
      60_000,
      200
    )
    expect(first.get(ids[7]!)!["price"]).toBe(1.07)

    // one item changes: its piece is rebuilt, the three others are reused
    await putItems(server, [simpleItem(ids[7]!, 99_999)])
    const second = await eventually(
      async () => {
        const items = await gzipDump()
        expect(items.get(ids[7]!)!["price"]).toBe(999.99)
        return items
      },
      60_000,
      200
    )
    expect(second.size).toBe(ITEMS)
    for (const [id, item] of first) if (id !== ids[7]) expect(second.get(id)).toEqual(item)
    const full = builds().filter((b) => b.items === ITEMS)
    expect(full.length).toBeGreaterThanOrEqual(2)
    expect(full.every((b) => b.pieces === 4)).toBe(true)
    // after the change, some build rebuilt exactly one piece
    expect(full.some((b) => b.reused === 3)).toBe(true)

    // nothing changes: every piece is reused, and the bytes decode the same
    const before = builds().length
    await eventually(() => expect(builds().length).toBeGreaterThan(before + 1), 10_000, 200)
    expect(builds().at(-1)).toEqual({ items: ITEMS, pieces: 4, reused: 4 })
    const third = await gzipDump()
    expect(third).toEqual(second)

    // a removal is a change of its piece too
    await deleteItem(server, ids[9]!)
    await eventually(async () => expect((await gzipDump()).has(ids[9]!)).toBe(false), 60_000, 200)
    expect((await gzipDump()).size).toBe(ITEMS - 1)
  })
})
