import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "../support/server.js"

describe("smoke", () => {
  let server: RunningServer
  beforeAll(async () => { server = await startServer() })
  afterAll(async () => { await server?.stop() })

  it("a new merchant has a zero balance", async () => {
    const m = await server.createMerchant()
    const res = await server.api("/balance", { key: m.apiKey })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ available: 0, on_hold: 0, total_deposited: 0, total_spent: 0, currency: "USD", deposit_addresses: { trc20: null, bep20: null } })
  })
})
