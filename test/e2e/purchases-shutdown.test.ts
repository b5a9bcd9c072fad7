/**
 * A graceful shutdown (SIGTERM) with purchases under way (CONTRACT 1, 2): the merchant API drains
 * while the purchase worker still steps what was bought, /ready answers 503 meanwhile, a
 * kept-alive client is told to close, and what the worker still holds when it stops is let go for
 * another process to claim at once.
 */
import { Agent, request as httpRequest } from "node:http"
import { describe, expect, it } from "vitest"
import { freshDatabase } from "../support/database.js"
import { field } from "../support/expectations.js"
import { withStoppedDatabase } from "../support/purchases-db.js"
import { buyBody, fundedMerchant, listPurchases, loadItem, pollUntil, PURCHASE_ENV } from "../support/purchases.js"
import { startServer } from "../support/server.js"

/** A POST on a kept-alive connection: status, the Connection header and the JSON body. */
const postKeptAlive = (agent: Agent, url: string, key: string, body: unknown) =>
  new Promise<{ status: number; connection: string | undefined; json: unknown }>((resolve, reject) => {
    const text = JSON.stringify(body)
    const req = httpRequest(url, {
      method: "POST",
      agent,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(text) }
    }, (res) => {
      let data = ""
      res.on("data", (chunk: Buffer) => {
        data += chunk.toString()
      })
      res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, json: JSON.parse(data) }))
    })
    req.on("error", reject)
    req.end(text)
  })

describe("graceful shutdown with purchases under way", () => {
  it(
    "the worker steps a /buy-sync's purchase during the drain (200), /ready is 503 meanwhile, the kept-alive client is told to close, and the process exits",
    async () => {
      // acknowledgement 1 to 3 s after pickup, well within the wait; a grace far longer than that
      const server = await startServer({
        env: { ...PURCHASE_ENV, SIM_TIME_SCALE: "1", BUY_SYNC_WAIT_SECONDS: "20", SHUTDOWN_GRACE_SECONDS: "60" }
      })
      const agent = new Agent({ keepAlive: true })
      try {
        const m = await fundedMerchant(server, 10_000)
        const body = buyBody({ itemId: await loadItem(server, 500), maxPrice: 5 })
        const answer = postKeptAlive(agent, `${server.baseUrl}/api/v1/merchant/buy-sync`, m.apiKey, body)
        await pollUntil("the purchase", async () => ((await listPurchases(server, m, { custom_id: body.custom_id })).length === 1 ? true : undefined))
        const exited = server.stop("SIGTERM")
        // draining: the ops listener still answers, and says the process takes no more work
        const ready = await pollUntil("/ready during the drain", async () => {
          const res = await fetch(`${server.opsUrl}/ready`)
          const report: unknown = await res.json()
          return res.status === 503 ? report : undefined
        })
        expect(field(ready, "checks", "api")).toEqual({ ok: false })
        const res = await answer
        expect(res.status).toBe(200)
        expect(["processing", "sent_to_steam", "completed"]).toContain(field(res.json, "status"))
        expect(res.connection).toBe("close")
        // once the request is answered, nothing holds the process (the harness kills it after 15 s)
        expect(await exited).toBe(0)
      } finally {
        agent.destroy()
        await server.stop()
      }
    },
    60_000
  )

  it("what the worker still holds when it stops is let go and announced, not left leased", async () => {
    const database = await freshDatabase()
    // a first start migrates the database; then the benches' deferred worker: a new purchase is
    // due in a day, so it stays as the buy wrote it, leased to the buying process's worker
    await (await startServer({ env: PURCHASE_ENV, database })).stop()
    await withStoppedDatabase(database, async (query) => {
      await query(`CREATE FUNCTION test_defer_worker() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.next_step_at := now() + interval '1 day'; RETURN NEW; END $$`)
      await query(`CREATE TRIGGER test_defer_worker BEFORE INSERT ON purchases FOR EACH ROW EXECUTE FUNCTION test_defer_worker()`)
    })
    const server = await startServer({ env: PURCHASE_ENV, database })
    try {
      const m = await fundedMerchant(server, 10_000)
      const itemId = await loadItem(server, 500)
      const created = await server.merchant(m.apiKey).call((client) => client.purchases.buy({ payload: buyBody({ itemId, maxPrice: 5 }) }))
      expect(await server.stop("SIGTERM")).toBe(0)
      const rows = await withStoppedDatabase(
        database,
        (query) => query<{ status: string; lease_owner: string | null }>("SELECT status, lease_owner FROM purchases WHERE id = $1", [created.purchase_id])
      )
      expect(rows).toEqual([{ status: "created", lease_owner: null }])
    } finally {
      await server.stop()
      await database.drop()
    }
  }, 60_000)
})
