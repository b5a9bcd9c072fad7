/**
 * Balance and deposits over real sockets (spec 2.2, 2.4, 2.5, 4.1; CONTRACT 2 and 6): the Balance
 * shape, the fee table, crediting through POST /admin/deposits (tiers, half-up rounding,
 * idempotency on tx_id), validation, and the deposit list's order, pagination and isolation.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DepositItem } from "../../src/Deposits/Api.js"
import type { SimulatedDeposit } from "../../src/Ops/AdminApi.js"
import { bodyOf, errorBody, expectError, expectUsd, ISO_UTC, isUuid } from "../support/expectations.js"
import type { RunningServer } from "../support/server.js"
import { startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server?.stop()
})

type Merchant = { id: string; apiKey: string }

const balanceOf = (m: Merchant) => server.merchant(m.apiKey).call((client) => client.balance.getBalance())

type Deposit = typeof DepositItem.Type

/** POST /admin/deposits as sent: for bodies that are not valid, and where the status or headers are the point. */
const credit = (body: Record<string, unknown>) => server.admin("/admin/deposits", { method: "POST", body })
/** A tron deposit through `credit` (raw). */
const creditRaw = (merchantId: string, amount: number, txId?: string) =>
  credit({ merchant_id: merchantId, network: "tron", amount, ...(txId !== undefined ? { tx_id: txId } : {}) })
/** POST /admin/deposits through the typed client: the 201 DepositItem. */
const credited = (payload: typeof SimulatedDeposit.Type) => server.adminApi.call((client) => client.deposits.creditDeposit({ payload }))

const listAll = async (m: Merchant, limit?: number) => {
  const seen: Array<Deposit> = []
  let cursor: string | null = null
  for (let page = 0; page < 100; page++) {
    const res: { deposits: ReadonlyArray<Deposit>; next_cursor: string | null } = await server.merchant(m.apiKey).call((client) =>
      client.deposits.listDeposits({ urlParams: { ...(limit !== undefined ? { limit } : {}), ...(cursor !== null ? { cursor } : {}) } })
    )
    expect(Object.keys(res).sort()).toEqual(["deposits", "next_cursor"])
    if (limit !== undefined) expect(res.deposits.length).toBeLessThanOrEqual(limit)
    seen.push(...res.deposits)
    cursor = res.next_cursor
    if (cursor === null) return seen
    expect(typeof cursor).toBe("string")
    expect(res.deposits.length).toBe(limit) // a page before the end is full
  }
  throw new Error("pagination did not end")
}

/** Cents, so that sums of USD numbers are exact. */
const cents = (usd: number) => Math.round(usd * 100)

const expectInvariant = async (m: Merchant) => {
  const b = await balanceOf(m)
  expect(cents(b.available) + cents(b.total_spent)).toBe(cents(b.total_deposited))
  return b
}

const expectDepositItem = (item: Deposit) => {
  expect(Object.keys(item).sort()).toEqual(
    ["amount", "created_at", "currency", "destination", "id", "network", "provider", "status", "tx_id"]
  )
  expect(isUuid(item.id)).toBe(true)
  expect(typeof item.provider).toBe("string")
  expectUsd(item.amount)
  expect(item.amount).toBeGreaterThan(0)
  expect(item.currency).toBe("USD")
  expect(["tron", "bsc"]).toContain(item.network)
  expect(item.destination === null || typeof item.destination === "string").toBe(true)
  expect(typeof item.tx_id).toBe("string")
  expect(item.status).toBe("paid")
  expect(item.created_at).toMatch(ISO_UTC)
}

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
    expect((await balanceOf(m)).deposit_addresses).toEqual({ trc20, bep20 })

    await server.adminApi.call((client) => client.merchants.setLegacyAddresses({ path: { id: m.id }, payload: { trc20: null, bep20 } }))
    expect((await balanceOf(m)).deposit_addresses).toEqual({ trc20: null, bep20 })
    // Other merchants are unaffected.
    const other = await server.createMerchant()
    expect((await balanceOf(other)).deposit_addresses).toEqual({ trc20: null, bep20: null })
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
      const b = await expectInvariant(m)
      expect(cents(b.available)).toBe(expectedCents)
      expect(cents(b.total_deposited)).toBe(expectedCents)
    }
    const b = await balanceOf(m)
    expect(b).toMatchObject({ available: 16429.28, total_deposited: 16429.28, total_spent: 0, on_hold: 0 })
    // The list holds exactly the credited items, as returned at creation.
    const listed = await listAll(m)
    expect([...listed].sort((a, b) => a.id.localeCompare(b.id))).toEqual([...items].sort((a, b) => a.id.localeCompare(b.id)))
  })

  it("credits a bsc payment and names the legacy destination when the merchant has a retained address", async () => {
    const m = await server.createMerchant()
    const fresh = await credited({ merchant_id: m.id, network: "bsc", amount: 10 })
    expectDepositItem(fresh)
    expect(fresh).toMatchObject({ network: "bsc", destination: null, amount: 9.9 })
    expect(fresh.tx_id?.length).toBeGreaterThan(0) // an internal transfer id when none is given

    const bep20 = "0x8894E0a0c962CB723c1976a4421c95949bE2D4E3"
    await server.adminApi.call((client) => client.merchants.setLegacyAddresses({ path: { id: m.id }, payload: { trc20: null, bep20 } }))
    const legacy = await credited({ merchant_id: m.id, network: "bsc", amount: 20 })
    expect(legacy).toMatchObject({ network: "bsc", destination: bep20, amount: 19.8 })
    expect(legacy.provider).not.toBe(fresh.provider) // the retained earlier provider
    // A network without a retained address still goes to the new provider.
    const tron = await credited({ merchant_id: m.id, network: "tron", amount: 30 })
    expect(tron).toMatchObject({ network: "tron", destination: null, provider: fresh.provider })
    expect((await expectInvariant(m)).available).toBe(59.4) // 9.90 + 19.80 + 29.70
  })

  it("the same tx_id twice returns the same deposit and credits once", async () => {
    const m = await server.createMerchant()
    const txId = `tx-${randomUUID()}`
    const first = await creditRaw(m.id, 102.5, txId)
    const second = await creditRaw(m.id, 102.5, txId)
    expect(first.status).toBe(201)
    expect([200, 201]).toContain(second.status)
    expect(second.json).toEqual(first.json)
    // the repeat says it is one (the operator's CLI prints "already credited"); the first does not
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    expect(second.headers.get("idempotent-replayed")).toBe("true")
    const b = await expectInvariant(m)
    expect(b.available).toBe(101.47)
    expect(await listAll(m)).toHaveLength(1)
  })

  it("concurrent confirmations of one tx_id credit exactly once", async () => {
    const m = await server.createMerchant()
    const txId = `tx-${randomUUID()}`
    const results = await Promise.all(Array.from({ length: 8 }, () => creditRaw(m.id, 250, txId)))
    for (const res of results) {
      expect([200, 201], res.text).toContain(res.status)
      expect(bodyOf(res, DepositItem).id).toBe(bodyOf(results[0]!, DepositItem).id)
    }
    const b = await expectInvariant(m)
    expect(b.available).toBe(247.5)
    expect(await listAll(m)).toHaveLength(1)
  })

  it("the same tx_id for another merchant, or another amount, is 409 and credits nothing", async () => {
    const a = await server.createMerchant()
    const b = await server.createMerchant()
    const txId = `tx-${randomUUID()}`
    await server.deposit(a.id, 100, txId)

    const foreign = await creditRaw(b.id, 100, txId)
    expect(foreign.status).toBe(409)
    errorBody(foreign)
    expect(await balanceOf(b)).toMatchObject({ available: 0, total_deposited: 0 })
    expect(await listAll(b)).toHaveLength(0)

    const otherAmount = await creditRaw(a.id, 200, txId)
    expect(otherAmount.status).toBe(409)
    expect(await balanceOf(a)).toMatchObject({ available: 99, total_deposited: 99 })
  })

  it("refuses invalid amounts with 400 and leaves the balance unchanged", async () => {
    const m = await server.createMerchant()
    await server.deposit(m.id, 10)
    const before = await balanceOf(m)
    const amounts: Array<unknown> = [0, -0, -5, -0.01, "10", "abc", null, true, [10], { value: 10 }, 1.0000001, 10.1234567, 1e-7, 0.001, 0.0049]
    for (const amount of amounts) {
      const res = await credit({ merchant_id: m.id, network: "tron", amount, tx_id: `tx-${randomUUID()}` })
      expect({ amount, status: res.status }).toEqual({ amount, status: 400 })
      errorBody(res)
    }
    const missing = await credit({ merchant_id: m.id, network: "tron" })
    expect(missing.status).toBe(400)
    expect(await balanceOf(m)).toEqual(before)
    expect(await listAll(m)).toHaveLength(1)
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
      const res = await credit(body as Record<string, unknown>)
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expect(res.headers.get("content-type") ?? "").toMatch(/json/)
    }
    expect((await balanceOf(m)).available).toBe(0)
  })

  it("answers a huge amount without a 5xx, and consistently", async () => {
    // 1e10 USDT is 1e16 micro-USDT (beyond 2^53); 1e13 USDT is beyond a bigint of micro-USDT.
    const outcomes: Array<{ amount: number; status: number }> = []
    for (const amount of [1e10, 1e13]) {
      const m = await server.createMerchant()
      const res = await creditRaw(m.id, amount)
      outcomes.push({ amount, status: res.status })
      const b = await expectInvariant(m)
      expect(b.total_deposited).toBe(res.status === 201 ? bodyOf(res, DepositItem).amount : 0)
    }
    expect(outcomes.filter((o) => o.status !== 201 && o.status !== 400)).toEqual([])
  })

  it("an unknown merchant is 404", async () => {
    const res = await credit({ merchant_id: randomUUID(), network: "tron", amount: 10, tx_id: `tx-${randomUUID()}` })
    expect(res.status).toBe(404)
    errorBody(res)
  })
})

describe("GET /deposits", () => {
  let m: Merchant
  let created: Array<Deposit>
  beforeAll(async () => {
    m = await server.createMerchant()
    created = []
    for (const amount of [10, 20, 30, 40, 50]) created.push(await server.deposit(m.id, amount, `tx-${randomUUID()}`))
  })

  /**
   * Created one after another, each in its own transaction, so creation times strictly increase:
   * newest first is the reverse creation order (the id tie-break cannot be provoked through the API).
   */
  const ordered = (items: ReadonlyArray<Deposit>) => [...items].reverse()

  it("lists confirmed credits newest first, then by id, with a null next_cursor at the end", async () => {
    const res = await server.merchant(m.apiKey).call((client) => client.deposits.listDeposits({ urlParams: {} }))
    expect(res.next_cursor).toBeNull()
    expect(res.deposits).toHaveLength(5)
    for (const item of res.deposits) expectDepositItem(item)
    expect(res.deposits).toEqual(ordered(created))
    const times = res.deposits.map((d) => Date.parse(d.created_at))
    expect(times).toEqual([...times].sort((a, b) => b - a))
    expect(res.deposits.map((d) => d.amount)).toEqual([49.5, 39.6, 29.7, 19.8, 9.9])
  })

  it("pages with limit=2 visit every deposit exactly once, in order", async () => {
    const all = await listAll(m, 2)
    expect(all.map((d) => d.id)).toEqual(ordered(created).map((d) => d.id))
    expect(new Set(all.map((d) => d.id)).size).toBe(5)
    const ones = await listAll(m, 1)
    expect(ones.map((d) => d.id)).toEqual(ordered(created).map((d) => d.id))
    const max = await server.merchant(m.apiKey).call((client) => client.deposits.listDeposits({ urlParams: { limit: 200 } }))
    expect(max.deposits).toHaveLength(5)
  })

  it("a cursor stays valid when new deposits arrive, and does not repeat earlier pages", async () => {
    const other = await server.createMerchant()
    for (const amount of [1, 2, 3]) await server.deposit(other.id, amount)
    const first = await server.merchant(other.apiKey).call((client) => client.deposits.listDeposits({ urlParams: { limit: 2 } }))
    expect(first.deposits).toHaveLength(2)
    expect(first.next_cursor).not.toBeNull()
    await server.deposit(other.id, 4) // newer than everything: belongs before the cursor
    const rest = await server.merchant(other.apiKey).call((client) => client.deposits.listDeposits({ urlParams: { limit: 2, cursor: first.next_cursor! } }))
    expect(rest.deposits.map((d) => d.amount)).toEqual([0.99])
    expect(rest.next_cursor).toBeNull()
  })

  it("limit outside 1..200 or not an integer is 400 MERCHANT_INVALID_QUERY", async () => {
    for (const limit of ["0", "201", "abc", "-1", "1.5", "1e2x", ""]) {
      const res = await server.api(`/deposits?limit=${limit}`, { key: m.apiKey })
      if (limit === "") {
        // An empty value is either ignored (default) or refused; never a 5xx.
        expect([200, 400]).toContain(res.status)
        continue
      }
      expect({ limit, status: res.status }).toEqual({ limit, status: 400 })
      expectError(res, 400, "MERCHANT_INVALID_QUERY")
    }
  })

  it("a cursor that is not one of ours is 400 MERCHANT_INVALID_QUERY", async () => {
    const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
    const cursors = [
      "garbage",
      "!!!",
      "%00",
      "x".repeat(5000),
      forged({ a: 1 }),
      forged(["2020-01-01T00:00:00.000000Z", "not-a-uuid"]),
      forged(["yesterday", randomUUID()]),
      forged(["2020-01-01T00:00:00.000000Z"])
    ]
    for (const cursor of cursors) {
      const res = await server.api(`/deposits?cursor=${encodeURIComponent(cursor)}`, { key: m.apiKey })
      expect({ cursor: cursor.slice(0, 40), status: res.status }).toEqual({ cursor: cursor.slice(0, 40), status: 400 })
      expectError(res, 400, "MERCHANT_INVALID_QUERY")
    }
  })

  it("another merchant never sees these deposits, even with this merchant's cursor", async () => {
    const stranger = await server.createMerchant()
    const own = await server.deposit(stranger.id, 77)
    const list = await listAll(stranger)
    expect(list.map((d) => d.id)).toEqual([own.id])
    const first = await server.merchant(m.apiKey).call((client) => client.deposits.listDeposits({ urlParams: { limit: 1 } }))
    expect(first.next_cursor).not.toBeNull()
    const borrowed = await server.merchant(stranger.apiKey).call((client) => client.deposits.listDeposits({ urlParams: { cursor: first.next_cursor! } }))
    const ids = new Set(created.map((d) => d.id))
    for (const d of borrowed.deposits) expect(ids.has(d.id)).toBe(false)
  })

  it("the balance agrees with the list: total_deposited is the sum of credited amounts, and available + total_spent = total_deposited", async () => {
    const b = await expectInvariant(m)
    const sum = (await listAll(m)).reduce((acc, d) => acc + cents(d.amount), 0)
    expect(cents(b.total_deposited)).toBe(sum)
    expect(b.total_deposited).toBe(148.5)
  })
})
