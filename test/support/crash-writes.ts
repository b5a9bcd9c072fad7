/**
 * Writes sent to a service that is killed among them (buys, deposits, catalogue pages), each
 * recording what its 2xx answer named; and the checks after a restart that everything answered is
 * there exactly once: found by its id, found again by a repeat, and added up in the balances.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { expect } from "vitest"
import { field } from "./expectations.js"
import { balanceOf, buy, type buyBody, cents, creditedCents, getPurchase, IN_FLIGHT, listedIds, listPurchases, type Merchant, pollUntil } from "./purchases.js"
import type { RunningServer } from "./server.js"

/** A catalogue page (PUT /admin/catalogue/items) and whether it was answered. */
export interface CataloguePage {
  readonly name: string
  answered: boolean
}

export interface BuyRequest {
  readonly kind: "buy"
  readonly m: Merchant
  readonly body: ReturnType<typeof buyBody>
  readonly priceCents: number
  /** The purchase a 2xx answer named. */
  purchaseId?: string
}

export interface DepositRequest {
  readonly kind: "deposit"
  readonly m: Merchant
  readonly txId: string
  readonly sentCents: number
  /** The deposit a 2xx answer named. */
  depositId?: string
}

export type Sent = BuyRequest | DepositRequest

export const send = (server: RunningServer, request: Sent) =>
  request.kind === "buy"
    ? buy(server, request.m, request.body)
    : server.admin("/admin/deposits", {
      method: "POST",
      body: { merchant_id: request.m.id, network: "tron", amount: request.sentCents / 100, tx_id: request.txId }
    })

/**
 * Records a 201's purchase or deposit on the request: a request answered twice (a repeat) must be
 * answered with the same one. Anything but a 201 is a fault of the service (every request is valid
 * and funded), collected in `faults`.
 */
export const record = (request: Sent, status: number, json: unknown, text: string, faults: Array<string>) => {
  if (status !== 201) return faults.push(`${request.kind} answered ${status}: ${text.slice(0, 500)}`)
  const id = field(json, request.kind === "buy" ? "purchase_id" : "id")
  if (typeof id !== "string") return faults.push(`${request.kind} 201 without an id: ${text.slice(0, 500)}`)
  const known = request.kind === "buy" ? request.purchaseId : request.depositId
  if (known !== undefined && known !== id) return faults.push(`${request.kind} repeated: ${known}, then ${id}`)
  if (request.kind === "buy") request.purchaseId = id
  else request.depositId = id
}

/** The pid that DATA_DIR/pg.lock names. */
export const lockPid = (dataDir: string): unknown => {
  const text = readFileSync(join(dataDir, "pg.lock"), "utf8")
  return field(JSON.parse(text), "pid")
}

/**
 * After a restart: each request of the round just killed sent again (a repeat finds what the first
 * made; one that was never answered is made now, or found), then every purchase and deposit of all
 * rounds checked against the merchants' lists and balances. `sizes`: the items of a catalogue page,
 * and how many requests are sent again at once.
 */
export const verifyAfterRestart = async (
  server: RunningServer,
  merchants: ReadonlyArray<Merchant>,
  requests: ReadonlyArray<Sent>,
  lastRound: ReadonlyArray<Sent>,
  pages: ReadonlyArray<CataloguePage>,
  sizes: { readonly pageItems: number; readonly concurrent: number }
) => {
  // a catalogue page is written whole or not at all: all its items if it was answered, all or none if not
  for (const page of pages) {
    const listed = (await listedIds(server, merchants[0]!, page.name)).length
    if (page.answered) expect(listed, page.name).toBe(sizes.pageItems)
    else expect([0, sizes.pageItems], page.name).toContain(listed)
  }
  const faults: Array<string> = []
  const unique = [...new Set(lastRound)]
  // what was answered before the kill is there, by its id
  for (const request of unique) {
    if (request.kind === "buy" && request.purchaseId !== undefined) {
      const found = await getPurchase(server, request.m, request.purchaseId)
      expect(found.custom_id).toBe(request.body.custom_id)
    }
  }
  for (let i = 0; i < unique.length; i += sizes.concurrent) {
    await Promise.all(
      unique.slice(i, i + sizes.concurrent).map(async (request) => {
        const res = await send(server, request)
        record(request, res.status, res.json, res.text, faults)
      })
    )
  }
  expect(faults).toEqual([])

  for (const m of merchants) {
    const buys = requests.filter((r): r is BuyRequest => r.kind === "buy" && r.m === m)
    const deposits = requests.filter((r): r is DepositRequest => r.kind === "deposit" && r.m === m)
    // one purchase per custom_id, each the one its answers named
    const purchases = await listPurchases(server, m)
    expect(purchases.map((p) => p.purchase_id).sort()).toEqual(buys.map((b) => b.purchaseId).sort())
    expect(purchases.map((p) => p.custom_id).sort()).toEqual(buys.map((b) => b.body.custom_id).sort())
    // one deposit per tx_id, each the one its answers named, credited once
    const listed = await depositsOf(server, m)
    expect(listed.map((d) => d.id).sort()).toEqual(deposits.map((d) => d.depositId).sort())
    for (const d of deposits) expect(cents(listed.find((l) => l.id === d.depositId)!.amount)).toBe(creditedCents(d.sentCents))
    // the balance: what was credited, less what was bought (no purchase fails here), of which the
    // purchases still under way are on hold
    const balance = await balanceOf(server, m)
    expect(balance.totalDeposited).toBe(deposits.reduce((sum, d) => sum + creditedCents(d.sentCents), 0))
    expect(balance.totalSpent).toBe(buys.reduce((sum, b) => sum + b.priceCents, 0))
    await expectOnHoldInFlight(server, m)
  }
}

/** Every deposit of a merchant (GET /deposits, all pages). */
const depositsOf = async (server: RunningServer, m: Merchant) => {
  const out: Array<{ id: string; amount: number }> = []
  let cursor: string | null = null
  for (let page = 0; page < 100; page++) {
    const list: { deposits: ReadonlyArray<{ id: string; amount: number }>; next_cursor: string | null } = await server.merchant(m.apiKey).call((client) =>
      client.deposits.listDeposits({ urlParams: { limit: 200, ...(cursor !== null ? { cursor } : {}) } })
    )
    out.push(...list.deposits)
    cursor = list.next_cursor
    if (cursor === null) return out
  }
  throw new Error("deposit pagination did not end")
}

/**
 * on_hold is the price of the purchases still under way. The worker finishes purchases meanwhile
 * (on_hold only falls: no buys are made now), so the list is compared only when the balance read
 * before it and the one after agree.
 */
const expectOnHoldInFlight = (server: RunningServer, m: Merchant) =>
  pollUntil(
    `on_hold of ${m.id} = its purchases under way`,
    async () => {
      const before = await balanceOf(server, m)
      const inFlight = (await listPurchases(server, m)).filter((p) => IN_FLIGHT.includes(p.status)).reduce((sum, p) => sum + cents(p.price), 0)
      const after = await balanceOf(server, m)
      return before.onHold === after.onHold && after.onHold === inFlight ? true : undefined
    },
    60_000,
    100
  )
