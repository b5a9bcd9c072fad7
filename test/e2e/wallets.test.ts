/**
 * Deposit wallets end to end (spec 2.3, 2.4, 3.2, 4.1, 7.2; CONTRACT 5.4): one durable request per
 * merchant and network, its states, the lost provider answer ending bound after a reconcile with one
 * provider wallet, concurrent requests, outages, cross-merchant reads, and payments as signed
 * callbacks credited with the tier commission. The issuance and settlement switches and a process
 * killed mid-request: wallets-switches.test.ts.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DepositWallet } from "../../src/Deposits/Api.js"
import { bodyOf, codeOf, field } from "../support/expectations.js"
import { balanceOf, type Merchant, pollUntil } from "../support/purchases.js"
import { metricValue, type RunningServer, setMerchantStatus, startServer } from "../support/server.js"
import {
  adminWallets,
  BSC,
  creations,
  expectWalletShape,
  merchantWhere,
  paid,
  payee,
  postPayment,
  postReconcile,
  postWallet,
  reconciled,
  requested,
  setWalletProvider,
  setWalletStatus,
  TRON,
  WALLET_ENV,
  walletsOf
} from "../support/wallets.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: WALLET_ENV })
})
afterAll(async () => {
  await server?.stop()
})

describe("requesting a wallet", () => {
  it("a new merchant has none; a request binds a validated address per network; a repeat returns the saved request and creates nothing", async () => {
    const m = await merchantWhere(server, "tron", false)
    expect(await walletsOf(server, m)).toEqual({ issuance_enabled: true, can_create: true, wallets: [] })
    const before = await creations(server)
    const tron = await requested(server, m, "tron")
    expectWalletShape(tron)
    expect(tron).toMatchObject({ network: "tron", status: "bound", can_deposit: true, memo: null })
    expect(tron.address).toMatch(TRON)
    const again = await requested(server, m, "tron")
    expect([again.id, again.address]).toEqual([tron.id, tron.address])
    expect(await creations(server)).toBe(before + 1)

    const bscMerchant = await merchantWhere(server, "bsc", false)
    const bsc = await requested(server, bscMerchant, "bsc")
    expect(bsc.status).toBe("bound")
    expect(bsc.address).toMatch(BSC)

    expect((await walletsOf(server, m)).wallets).toEqual([tron])
  })

  it("an invalid or missing network is 400 MERCHANT_WALLET_NETWORK_INVALID, malformed JSON is problem details; nothing is saved", async () => {
    const m = await server.createMerchant()
    for (const body of [{}, { network: "eth" }, { network: "TRON" }, { network: 5 }, { network: null }, [], JSON.stringify("tron")]) {
      const res = await postWallet(server, m, body)
      expect([JSON.stringify(body), res.status, codeOf(res)]).toEqual([JSON.stringify(body), 400, "MERCHANT_WALLET_NETWORK_INVALID"])
    }
    const malformed = await server.api("/deposits/wallets", {
      method: "POST",
      key: m.apiKey,
      body: "{\"network\":",
      headers: { "content-type": "application/json" }
    })
    expect([malformed.status, malformed.headers.get("content-type")]).toEqual([400, "application/problem+json"])
    expect((await walletsOf(server, m)).wallets).toEqual([])
  })

  it("20 concurrent requests for one network give one request and one provider creation", async () => {
    const m = await merchantWhere(server, "bsc", false)
    const before = await creations(server)
    const answers = await Promise.all(Array.from({ length: 20 }, () => postWallet(server, m, { network: "bsc" })))
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200))
    const ids = answers.map((a) => bodyOf(a, DepositWallet).id)
    expect(new Set(ids).size).toBe(1)
    expect(await creations(server)).toBe(before + 1)
    // the losers answered the saved request as it was (creation_started or already bound); now it is bound
    expect((await walletsOf(server, m)).wallets.map((w) => [w.id, w.status])).toEqual([[ids[0], "bound"]])
  })

  it("a lost creation answer: 502, requires_reconciliation (no address, do not send funds), no second creation; reconcile binds the one provider wallet", async () => {
    const m = await merchantWhere(server, "tron", true)
    const before = await creations(server)
    const lost = await postWallet(server, m, { network: "tron" })
    expect([lost.status, codeOf(lost)]).toEqual([502, "MERCHANT_WALLET_PROVIDER_UNAVAILABLE"])
    const [saved] = (await walletsOf(server, m)).wallets
    expect(saved).toMatchObject({ status: "requires_reconciliation", address: null, can_deposit: false })
    const repeat = await requested(server, m, "tron")
    expect([repeat.id, repeat.status]).toEqual([saved!.id, "requires_reconciliation"])
    expect(await creations(server)).toBe(before + 1)
    const bound = await reconciled(server, m, saved!.id)
    expect(bound).toMatchObject({ id: saved!.id, status: "bound", can_deposit: true })
    expect(bound.address).toMatch(TRON)
    const admin = await adminWallets(server, m)
    expect(admin).toHaveLength(1)
    expect(admin[0]!.provider_wallet_id).toMatch(/^wp_/)
    expect(await creations(server)).toBe(before + 1)
  })

  it("a provider outage: 502 with the request saved as prepared (readable), reconcile 409 WALLET_CREATION_NOT_STARTED; after recovery it binds", async () => {
    const m = await merchantWhere(server, "tron", false)
    await setWalletProvider(server, false)
    try {
      const down = await postWallet(server, m, { network: "tron" })
      expect([down.status, codeOf(down)]).toEqual([502, "MERCHANT_WALLET_PROVIDER_UNAVAILABLE"])
      const [saved] = (await walletsOf(server, m)).wallets
      expect(saved).toMatchObject({ status: "prepared", address: null, can_deposit: false })
      const notStarted = await postReconcile(server, m, saved!.id)
      expect([notStarted.status, codeOf(notStarted)]).toEqual([409, "WALLET_CREATION_NOT_STARTED"])
    } finally {
      await setWalletProvider(server, true)
    }
    expect((await requested(server, m, "tron")).status).toBe("bound")
  })

  it("reconcile during an outage of a bound wallet is 502 and changes nothing", async () => {
    const m = await merchantWhere(server, "bsc", false)
    const bound = await requested(server, m, "bsc")
    await setWalletProvider(server, false)
    try {
      const res = await postReconcile(server, m, bound.id)
      expect([res.status, codeOf(res)]).toEqual([502, "MERCHANT_WALLET_PROVIDER_UNAVAILABLE"])
    } finally {
      await setWalletProvider(server, true)
    }
    expect((await walletsOf(server, m)).wallets).toEqual([bound])
  })
})

describe("reconcile", () => {
  it("of another merchant's wallet, an unknown or a malformed id is 404 MERCHANT_WALLET_NOT_FOUND", async () => {
    const owner = await merchantWhere(server, "tron", false)
    const other = await server.createMerchant()
    const wallet = await requested(server, owner, "tron")
    for (const [who, id] of [[other, wallet.id], [owner, randomUUID()], [owner, "not-a-uuid"], [owner, "00000000-0000-0000-0000-000000000000x"]] as const) {
      const res = await postReconcile(server, who, id)
      expect([id, res.status, codeOf(res)]).toEqual([id, 404, "MERCHANT_WALLET_NOT_FOUND"])
    }
  })

  it("refreshes a bound wallet's provider status (disabled: do not send funds) and never its address", async () => {
    const m = await merchantWhere(server, "tron", false)
    const bound = await requested(server, m, "tron")
    await setWalletStatus(server, bound.id, "disabled")
    // saved state only: the list still says what was last read
    expect((await walletsOf(server, m)).wallets[0]!.can_deposit).toBe(true)
    const disabled = await reconciled(server, m, bound.id)
    expect(disabled).toMatchObject({ id: bound.id, status: "bound", address: bound.address, can_deposit: false })
    expect((await walletsOf(server, m)).wallets[0]).toMatchObject({ can_deposit: false, address: bound.address })
    await setWalletStatus(server, bound.id, "active")
    expect(await reconciled(server, m, bound.id)).toMatchObject({ can_deposit: true, address: bound.address })
  })
})

describe("an inactive merchant", () => {
  it("gets 403 MERCHANT_NOT_ACTIVE on wallet mutations before any validation; reads still work and can_create is false", async () => {
    const m = await merchantWhere(server, "tron", false)
    const wallet = await requested(server, m, "tron")
    await setMerchantStatus(server, m.id, "inactive")
    for (const body of [{ network: "bsc" }, { network: "nope" }]) {
      const res = await postWallet(server, m, body)
      expect([res.status, codeOf(res)]).toEqual([403, "MERCHANT_NOT_ACTIVE"])
    }
    expect(codeOf(await postReconcile(server, m, wallet.id))).toBe("MERCHANT_NOT_ACTIVE")
    const listed = await walletsOf(server, m)
    expect([listed.can_create, listed.wallets.length]).toEqual([false, 1])
  })
})

describe("payments", () => {
  const depositsOf = async (m: Merchant) => (await server.merchant(m.apiKey).call((client) => client.deposits.listDeposits({ urlParams: {} }))).deposits

  it("102.50 USDT credits 101.47 and 6435 credits 6402.82 (tier commission), as walletpay deposits to the wallet's address, with balance.deposited", async () => {
    const { m, wallet } = await payee(server, "tron")
    for (const [amount, credited, txId] of [[102.5, 101.47, `t-${randomUUID()}`], [6435, 6402.82, `t-${randomUUID()}`]] as const) {
      await paid(server, wallet.id, amount, txId)
      const deposit = await pollUntil("the deposit credited", async () => (await depositsOf(m)).find((d) => d.tx_id === txId))
      expect(deposit).toMatchObject({
        provider: "walletpay",
        amount: credited,
        currency: "USD",
        network: "tron",
        destination: wallet.address,
        tx_id: txId,
        status: "paid"
      })
    }
    expect(await balanceOf(server, m)).toEqual({ available: 650_429, onHold: 0, totalDeposited: 650_429, totalSpent: 0 })
    const { events } = await server.merchant(m.apiKey).call((client) => client.webhooks.listWebhookEvents({ urlParams: {} }))
    expect(events.filter((e) => e.event_type === "balance.deposited")).toHaveLength(2)
  })

  it("a transfer sent again is credited once", async () => {
    const { m, wallet } = await payee(server, "bsc")
    const txId = `again-${randomUUID()}`
    const repeats = await metricValue(server, "wallet_payment_callbacks_total{outcome=\"repeat\"}")
    await paid(server, wallet.id, 50, txId)
    await pollUntil("credited", async () => (await depositsOf(m)).length === 1 ? true : undefined)
    await paid(server, wallet.id, 50, txId)
    await pollUntil(
      "the repeat seen",
      async () => (await metricValue(server, "wallet_payment_callbacks_total{outcome=\"repeat\"}")) > repeats ? true : undefined
    )
    expect(await depositsOf(m)).toHaveLength(1)
    expect((await balanceOf(server, m)).available).toBe(4950)
  })

  it("to a wallet the provider has disabled: recorded, not credited", async () => {
    const { m, wallet } = await payee(server, "tron")
    await setWalletStatus(server, wallet.id, "disabled")
    const before = await metricValue(server, "wallet_payment_callbacks_total{outcome=\"wallet_disabled\"}")
    await paid(server, wallet.id, 100)
    await pollUntil(
      "the callback recorded",
      async () => (await metricValue(server, "wallet_payment_callbacks_total{outcome=\"wallet_disabled\"}")) > before ? true : undefined
    )
    expect(await depositsOf(m)).toEqual([])
    expect((await balanceOf(server, m)).totalDeposited).toBe(0)
  })

  it("a forged callback is 401 and changes nothing", async () => {
    const { m, wallet } = await payee(server, "tron")
    const providerWalletId = (await adminWallets(server, m))[0]!.provider_wallet_id
    const body = JSON.stringify({
      transfer_id: `forged-${randomUUID()}`,
      provider_wallet_id: providerWalletId,
      network: "tron",
      address: wallet.address,
      amount: "1000",
      currency: "USDT",
      tx_hash: null,
      wallet_status: "active"
    })
    const now = String(Math.floor(Date.now() / 1000))
    const cases: ReadonlyArray<Record<string, string>> = [
      { "x-walletpay-timestamp": now, "x-walletpay-signature": "0".repeat(64) },
      { "x-walletpay-timestamp": now },
      {},
      { "x-walletpay-timestamp": "1000", "x-walletpay-signature": "0".repeat(64) }
    ]
    for (const headers of cases) {
      const res = await fetch(`${server.baseUrl}/provider/walletpay/callbacks`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body
      })
      expect([res.status, field(await res.json(), "error", "code")]).toEqual([401, "PROVIDER_CALLBACK_REJECTED"])
    }
    expect(await depositsOf(m)).toEqual([])
  })

  it("a payment to a wallet the provider has not created is refused (409 ADMIN_CONFLICT); unknown wallet 404; a bad amount 400", async () => {
    const m = await merchantWhere(server, "tron", false)
    await setWalletProvider(server, false)
    const prepared = await postWallet(server, m, { network: "tron" })
    await setWalletProvider(server, true)
    expect(prepared.status).toBe(502)
    const [saved] = (await walletsOf(server, m)).wallets
    expect(codeOf(await postPayment(server, saved!.id, { amount: 10 }))).toBe("ADMIN_CONFLICT")
    expect((await postPayment(server, randomUUID(), { amount: 10 })).status).toBe(404)
    for (const amount of [0, -1, 1e-7, "10"]) {
      const res = await postPayment(server, saved!.id, { amount })
      expect([String(amount), res.status]).toEqual([String(amount), 400])
    }
  })
})

describe("observability", () => {
  it("/metrics has the wallet requests by state and the provider calls by outcome", async () => {
    expect(await metricValue(server, "wallet_requests{state=\"bound\"}")).toBeGreaterThan(0)
    expect(await metricValue(server, "wallet_requests{state=\"prepared\"}")).toBeGreaterThanOrEqual(0)
    expect(await metricValue(server, "wallet_provider_calls_total{call=\"create\",outcome=\"ok\"}")).toBeGreaterThan(0)
    expect(await metricValue(server, "wallet_provider_calls_total{call=\"create\",outcome=\"answer_lost\"}")).toBeGreaterThan(0)
    expect(await metricValue(server, "wallet_provider_calls_total{call=\"create\",outcome=\"unavailable\"}")).toBeGreaterThan(0)
    expect(await metricValue(server, "wallet_payment_callbacks_total{outcome=\"credited\"}")).toBeGreaterThan(0)
    const text = await fetch(`${server.opsUrl}/metrics`).then((r) => r.text())
    for (const state of ["prepared", "creation_started", "requires_reconciliation", "bound"]) expect(text).toContain(`wallet_requests{state="${state}"}`)
  })
})
