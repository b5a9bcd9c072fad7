/**
 * Deposits from both sides (spec 2.2, 2.4, 2.5; CONTRACT 2): crediting through POST /admin/deposits
 * as sent or through the typed client, a merchant's whole deposit list page by page, and the
 * assertions on a DepositItem's shape and on the balance adding up.
 */
import { expect } from "vitest"
import type { DepositItem } from "../../src/Deposits/Api.js"
import type { SimulatedDeposit } from "../../src/Ops/AdminApi.js"
import { expectUsd, ISO_UTC, isUuid } from "./expectations.js"
import { cents, type Merchant } from "./purchase-requests.js"
import type { RunningServer } from "./server.js"

export type Deposit = typeof DepositItem.Type

/** GET /balance through the typed client: the Balance as sent, in USD. */
export const balanceUsd = (server: RunningServer, m: Merchant) => server.merchant(m.apiKey).call((client) => client.balance.getBalance())

/** POST /admin/deposits as sent: for bodies that are not valid, and where the status or headers are the point. */
export const creditAsSent = (server: RunningServer, body: Record<string, unknown>) => server.admin("/admin/deposits", { method: "POST", body })

/** A tron deposit through `creditAsSent`. */
export const creditTronAsSent = (server: RunningServer, merchantId: string, amount: number, txId?: string) =>
  creditAsSent(server, { merchant_id: merchantId, network: "tron", amount, ...(txId !== undefined ? { tx_id: txId } : {}) })

/** POST /admin/deposits through the typed client: the 201 DepositItem. */
export const credited = (server: RunningServer, payload: typeof SimulatedDeposit.Type) =>
  server.adminApi.call((client) => client.deposits.creditDeposit({ payload }))

/** Every deposit of the merchant, page by page (`limit` a page, the default without): each page full but the last. */
export const listAllDeposits = async (server: RunningServer, m: Merchant, limit?: number) => {
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

/** available + total_spent = total_deposited, to the cent: the balance read. */
export const expectBalanceInvariant = async (server: RunningServer, m: Merchant) => {
  const b = await balanceUsd(server, m)
  expect(cents(b.available) + cents(b.total_spent)).toBe(cents(b.total_deposited))
  return b
}

/** A DepositItem with exactly the fields of spec 2.4, credited and paid. */
export const expectDepositItem = (item: Deposit) => {
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
