/**
 * Balance and deposits over real sockets (spec 2.2, 2.4, 2.5; CONTRACT 2 and 6): the Balance shape,
 * the fee table, and crediting through POST /admin/deposits (tiers, half-up rounding, idempotency
 * on tx_id, validation). The deposit list: deposits-list.test.ts.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DepositItem } from "../../src/Deposits/Api.js"
import {
  balanceUsd,
  creditAsSent,
  credited,
  creditTronAsSent,
  type Deposit,
  expectBalanceInvariant,
  expectDepositItem,
  listAllDeposits
} from "../support/deposits.js"
import { bodyOf, errorBody } from "../support/expectations.js"
import { cents } from "../support/purchases.js"
import type { RunningServer } from "../support/server.js"
import { startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server?.stop()
})

describe("GET /balance", () => {
  it("has every field of spec 2.2, in USD, with null deposit addresses before any are provisioned", async () => {
    const m = await server.createMerchant()
    const res = await server.api("/balance", { key: m.apiKey })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
    expect(res.json).toEqual({
      available: 0,
      on_hold: 0,
      total_deposited: 0,
      total_spent: 0,
      currency: "USD",
      deposit_addresses: { trc20: null, bep20: null }
    })
  })

  it("shows the retained legacy addresses set through PUT /admin/merchants/{id}/legacy-addresses", async () => {
    const m = await server.createMerchant()
    const trc20 = "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE"
    const bep20 = "0x8894E0a0c962CB723c1976a4421c95949bE2D4E3"
    await server.adminApi.call((client) => client.merchants.setLegacyAddresses({ path: { id: m.id }, payload: { trc20, bep20 } }))
    expect((await balanceUsd(server, m)).deposit_addresses).toEqual({ trc20, bep20 })

    await server.adminApi.call((client) => client.merchants.setLegacyAddresses({ path: { id: m.id }, payload: { trc20: null, bep20 } }))
    expect((await balanceUsd(server, m)).deposit_addresses).toEqual({ trc20: null, bep20 })
    // Other merchants are unaffected.
    const other = await server.createMerchant()
    expect((await balanceUsd(server, other)).deposit_addresses).toEqual({ trc20: null, bep20: null })
  })
})

describe("GET /deposits/fees", () => {
  it("is exactly the tier table of spec 2.5", async () => {
    const m = await server.createMerchant()
    const fees = await server.merchant(m.apiKey).call((client) => client.deposits.getFees())
    expect(fees).toEqual({
      currency: "USD",
      tiers: [
        { min_amount: 0, max_amount: 5000, percent: 1 },
        { min_amount: 5000, max_amount: null, percent: 0.5 }
      ]
    })
  })
})

describe("POST /admin/deposits: crediting", () => {
  it("credits the amount sent minus the tier commission, rounded half-up, into the DepositItem and the balance", async () => {
    const m = await server.createMerchant()
    const cases: Array<[number, number]> = [
      [102.5, 101.47], // 1 %: 1.025 -> 1.03
      [6435, 6402.82], // 0.5 %: 32.175 -> 32.18
      [4999.99, 4949.99], // 1 %: 49.9999 -> 50.00
      [5000, 4975] // exactly 5000 is in the 0.5 % tier
    ]
    let expectedCents = 0
    const items: Array<Deposit> = []
    for (const [sent, credited] of cases) {
      const txId = `tx-${randomUUID()}`
      const item = await server.deposit(m.id, sent, txId)
      expectDepositItem(item)
      expect({ sent, amount: item.amount }).toEqual({ sent, amount: credited })
      expect(item.tx_id).toBe(txId)
      expect(item.network).toBe("tron")
      expect(item.destination).toBeNull()
      items.push(item)
      expectedCents += cents(credited)
      const b = await expectBalanceInvariant(server, m)
      expect(cents(b.available)).toBe(expectedCents)
      expect(cents(b.total_deposited)).toBe(expectedCents)
    }
    const b = await balanceUsd(server, m)
    expect(b).toMatchObject({ available: 16429.28, total_deposited: 16429.28, total_spent: 0, on_hold: 0 })
    // The list holds exactly the credited items, as returned at creation.
    const listed = await listAllDeposits(server, m)
    expect([...listed].sort((a, b) => a.id.localeCompare(b.id))).toEqual([...items].sort((a, b) => a.id.localeCompare(b.id)))
  })

  it("credits a bsc payment and names the legacy destination when the merchant has a retained address", async () => {
    const m = await server.createMerchant()
    const fresh = await credited(server, { merchant_id: m.id, network: "bsc", amount: 10 })
    expectDepositItem(fresh)
    expect(fresh).toMatchObject({ network: "bsc", destination: null, amount: 9.9 })
    expect(fresh.tx_id?.length).toBeGreaterThan(0) // an internal transfer id when none is given

    const bep20 = "0x8894E0a0c962CB723c1976a4421c95949bE2D4E3"
    await server.adminApi.call((client) => client.merchants.setLegacyAddresses({ path: { id: m.id }, payload: { trc20: null, bep20 } }))
    const legacy = await credited(server, { merchant_id: m.id, network: "bsc", amount: 20 })
    expect(legacy).toMatchObject({ network: "bsc", destination: bep20, amount: 19.8 })
    expect(legacy.provider).not.toBe(fresh.provider) // the retained earlier provider
    // A network without a retained address still goes to the new provider.
    const tron = await credited(server, { merchant_id: m.id, network: "tron", amount: 30 })
    expect(tron).toMatchObject({ network: "tron", destination: null, provider: fresh.provider })
    expect((await expectBalanceInvariant(server, m)).available).toBe(59.4) // 9.90 + 19.80 + 29.70
  })

  it("the same tx_id twice returns the same deposit and credits once", async () => {
    const m = await server.createMerchant()
    const txId = `tx-${randomUUID()}`
    const first = await creditTronAsSent(server, m.id, 102.5, txId)
    const second = await creditTronAsSent(server, m.id, 102.5, txId)
    expect(first.status).toBe(201)
    expect([200, 201]).toContain(second.status)
    expect(second.json).toEqual(first.json)
    // the repeat says it is one (the operator's CLI prints "already credited"); the first does not
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    expect(second.headers.get("idempotent-replayed")).toBe("true")
    const b = await expectBalanceInvariant(server, m)
    expect(b.available).toBe(101.47)
    expect(await listAllDeposits(server, m)).toHaveLength(1)
  })

  it("concurrent confirmations of one tx_id credit exactly once", async () => {
    const m = await server.createMerchant()
    const txId = `tx-${randomUUID()}`
    const results = await Promise.all(Array.from({ length: 8 }, () => creditTronAsSent(server, m.id, 250, txId)))
    for (const res of results) {
      expect([200, 201], res.text).toContain(res.status)
      expect(bodyOf(res, DepositItem).id).toBe(bodyOf(results[0]!, DepositItem).id)
    }
    const b = await expectBalanceInvariant(server, m)
    expect(b.available).toBe(247.5)
    expect(await listAllDeposits(server, m)).toHaveLength(1)
  })

  it("the same tx_id for another merchant, or another amount, is 409 and credits nothing", async () => {
    const a = await server.createMerchant()
    const b = await server.createMerchant()
    const txId = `tx-${randomUUID()}`
    await server.deposit(a.id, 100, txId)

    const foreign = await creditTronAsSent(server, b.id, 100, txId)
    expect(foreign.status).toBe(409)
    errorBody(foreign)
    expect(await balanceUsd(server, b)).toMatchObject({ available: 0, total_deposited: 0 })
    expect(await listAllDeposits(server, b)).toHaveLength(0)

    const otherAmount = await creditTronAsSent(server, a.id, 200, txId)
    expect(otherAmount.status).toBe(409)
    expect(await balanceUsd(server, a)).toMatchObject({ available: 99, total_deposited: 99 })
  })

  it("refuses invalid amounts with 400 and leaves the balance unchanged", async () => {
    const m = await server.createMerchant()
    await server.deposit(m.id, 10)
    const before = await balanceUsd(server, m)
    const amounts: Array<unknown> = [0, -0, -5, -0.01, "10", "abc", null, true, [10], { value: 10 }, 1.0000001, 10.1234567, 1e-7, 0.001, 0.0049]
    for (const amount of amounts) {
      const res = await creditAsSent(server, { merchant_id: m.id, network: "tron", amount, tx_id: `tx-${randomUUID()}` })
      expect({ amount, status: res.status }).toEqual({ amount, status: 400 })
      errorBody(res)
    }
    const missing = await creditAsSent(server, { merchant_id: m.id, network: "tron" })
    expect(missing.status).toBe(400)
    expect(await balanceUsd(server, m)).toEqual(before)
    expect(await listAllDeposits(server, m)).toHaveLength(1)
  })

  it("refuses other invalid bodies with 400", async () => {
    const m = await server.createMerchant()
    const bodies: Array<unknown> = [
      { merchant_id: m.id, network: "eth", amount: 10 },
      { merchant_id: m.id, network: "TRON", amount: 10 },
      { merchant_id: m.id, amount: 10 },
      { merchant_id: "not-a-uuid", network: "tron", amount: 10 },
      { network: "tron", amount: 10 },
      { merchant_id: m.id, network: "tron", amount: 10, tx_id: "" },
      { merchant_id: m.id, network: "tron", amount: 10, tx_id: 42 },
      [],
      "{not json"
    ]
    for (const body of bodies) {
      const res = await creditAsSent(server, body as Record<string, unknown>)
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expect(res.headers.get("content-type") ?? "").toMatch(/json/)
    }
    expect((await balanceUsd(server, m)).available).toBe(0)
  })

  it("answers a huge amount without a 5xx, and consistently", async () => {
    // 1e10 USDT is 1e16 micro-USDT (beyond 2^53); 1e13 USDT is beyond a bigint of micro-USDT.
    const outcomes: Array<{ amount: number; status: number }> = []
    for (const amount of [1e10, 1e13]) {
      const m = await server.createMerchant()
      const res = await creditTronAsSent(server, m.id, amount)
      outcomes.push({ amount, status: res.status })
      const b = await expectBalanceInvariant(server, m)
      expect(b.total_deposited).toBe(res.status === 201 ? bodyOf(res, DepositItem).amount : 0)
    }
    expect(outcomes.filter((o) => o.status !== 201 && o.status !== 400)).toEqual([])
  })

  it("an unknown merchant is 404", async () => {
    const res = await creditAsSent(server, { merchant_id: randomUUID(), network: "tron", amount: 10, tx_id: `tx-${randomUUID()}` })
    expect(res.status).toBe(404)
    errorBody(res)
  })
})
