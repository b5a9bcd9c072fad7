/**
 * Catalogue helpers of the black-box tests: loading through PUT /admin/catalogue/items, bounded
 * polling of the dump and the metrics, and the feed's assertions. The CatalogItem each admin input
 * must become is in catalogue-item.ts, the generated inputs in generated-items.ts; the feed client,
 * the raw HTTP of the dump and `eventually` are in feed.ts and polling.ts (also used by the chaos
 * command, which runs without the test runner). All are exported from here too.
 */
import * as http from "node:http"
import { expect } from "vitest"
import WebSocket from "ws"
import { ItemsUpserted } from "../../src/Ops/AdminApi.js"
import type { ItemInput } from "./catalogue-item.js"
import { bodyOf } from "./expectations.js"
import { feedUrl, rawGet } from "./feed.js"
import { eventually } from "./polling.js"
import type { RunningServer } from "./server.js"

export * from "./catalogue-item.js"
export { applyChanges, type Change, Feed, feedUrl, rawGet, rawRequest, type RawResponse } from "./feed.js"
export * from "./generated-items.js"
export { eventually } from "./polling.js"

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

/** The feed tests' settings: no synthetic catalogue or churn, a dump every second, no rate limit in the way. */
export const FEED_ENV = { SIM_CATALOGUE_SIZE: "0", SIM_CHURN_PER_SECOND: "0", DUMP_INTERVAL_SECONDS: "1", RATE_LIMIT_RPS: "100000", RATE_LIMIT_BURST: "100000" }

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
