/**
 * A merchant's deposit list over real sockets (spec 2.4, 4.1; CONTRACT 6): newest first, pages
 * that visit every deposit once, cursors that outlive new deposits and refuse to be forged or
 * borrowed by another merchant, limits outside 1..200 refused, and the balance agreeing with it.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Deposit, expectBalanceInvariant, expectDepositItem, listAllDeposits } from "../support/deposits.js"
import { expectError } from "../support/expectations.js"
import { forgedCursor } from "../support/hostile-input.js"
import { cents, type Merchant } from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer()
})
afterAll(async () => {
  await server?.stop()
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
    const all = await listAllDeposits(server, m, 2)
    expect(all.map((d) => d.id)).toEqual(ordered(created).map((d) => d.id))
    expect(new Set(all.map((d) => d.id)).size).toBe(5)
    const ones = await listAllDeposits(server, m, 1)
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
    const cursors = [
      "garbage",
      "!!!",
      "%00",
      "x".repeat(5000),
      forgedCursor({ a: 1 }),
      forgedCursor(["2020-01-01T00:00:00.000000Z", "not-a-uuid"]),
      forgedCursor(["yesterday", randomUUID()]),
      forgedCursor(["2020-01-01T00:00:00.000000Z"])
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
    const list = await listAllDeposits(server, stranger)
    expect(list.map((d) => d.id)).toEqual([own.id])
    const first = await server.merchant(m.apiKey).call((client) => client.deposits.listDeposits({ urlParams: { limit: 1 } }))
    expect(first.next_cursor).not.toBeNull()
    const borrowed = await server.merchant(stranger.apiKey).call((client) => client.deposits.listDeposits({ urlParams: { cursor: first.next_cursor! } }))
    const ids = new Set(created.map((d) => d.id))
    for (const d of borrowed.deposits) expect(ids.has(d.id)).toBe(false)
  })

  it("the balance agrees with the list: total_deposited is the sum of credited amounts, and available + total_spent = total_deposited", async () => {
    const b = await expectBalanceInvariant(server, m)
    const sum = (await listAllDeposits(server, m)).reduce((acc, d) => acc + cents(d.amount), 0)
    expect(cents(b.total_deposited)).toBe(sum)
    expect(b.total_deposited).toBe(148.5)
  })
})
