/**
 * Deposit wallets end to end (spec 2.3, 2.4, 3.2, 4.1, 7.2; CONTRACT 5.4): one durable request per
 * merchant and network, its states, the lost provider answer ending bound after a reconcile with one
 * provider wallet, concurrent requests, outages, cross-merchant reads, issuance and settlement
 * switches, a process killed between saving the request and the provider's answer, and payments as
 * signed callbacks credited with the tier commission.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DepositWallet } from "../../src/Deposits/Api.js"
import { losesCreationAnswer } from "../../src/Providers/Simulator/WalletProviderSim.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { bodyOf, codeOf, field } from "../support/expectations.js"
import { balanceOf, type Merchant, pollUntil, PURCHASE_ENV } from "../support/purchases.js"
import { metricValue, type RunningServer, setMerchantStatus, startServer } from "../support/server.js"

const ENV = { ...PURCHASE_ENV, WALLET_ISSUANCE_ENABLED: "true" }
type Network = "tron" | "bsc"
const TRON = /^T[1-9A-HJ-NP-Za-km-z]{33}$/
const BSC = /^0x[0-9a-f]{40}$/

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: ENV })
})
afterAll(async () => {
  await server?.stop()
})

/** GET /deposits/wallets through the typed client (a 200 DepositWalletList). */
const walletsOf = (s: RunningServer, m: Merchant) => s.merchant(m.apiKey).call((client) => client.deposits.listWallets())
/** POST /deposits/wallets as sent: for bodies that are not valid, and where the status (200, 502, 409) is the point. */
const request = (s: RunningServer, m: Merchant, body: unknown) => s.api("/deposits/wallets", { method: "POST", key: m.apiKey, body })
/** POST /deposits/wallets through the typed client: the 200 DepositWallet. */
const requested = (s: RunningServer, m: Merchant, network: Network) =>
  s.merchant(m.apiKey).call((client) => client.deposits.requestWallet({ payload: { network } }))
/** POST /deposits/wallets/{id}/reconcile as sent: for ids that are not valid, and where the status is the point. */
const reconcile = (s: RunningServer, m: Merchant, id: string) => s.api(`/deposits/wallets/${id}/reconcile`, { method: "POST", key: m.apiKey })
/** The reconcile through the typed client: the 200 DepositWallet. */
const reconciled = (s: RunningServer, m: Merchant, walletId: string) =>
  s.merchant(m.apiKey).call((client) => client.deposits.reconcileWallet({ path: { walletId } }))
/** GET /admin/merchants/{id}/wallets through the typed client. */
const adminWallets = async (s: RunningServer, m: Merchant) =>
  (await s.adminApi.call((client) => client.deposits.listMerchantWallets({ path: { id: m.id } }))).wallets
/** The simulated wallet provider up or down (PUT /admin/simulator/wallet-provider, 200). */
const setProvider = (available: boolean) => server.adminApi.call((client) => client.deposits.setWalletProvider({ payload: { available } }))
/** A simulated wallet's provider status (POST /admin/simulator/wallets/{id}/status, 200). */
const setWalletStatus = (walletId: string, status: "active" | "disabled") =>
  server.adminApi.call((client) => client.deposits.setWalletStatus({ path: { id: walletId }, payload: { status } }))
const creations = (s: RunningServer) =>
  Promise.all(["ok", "answer_lost", "unavailable"].map((o) => metricValue(s, `wallet_provider_calls_total{call="create",outcome="${o}"}`)))
    .then((counts) => counts.reduce((a, b) => a + b, 0))

/** A merchant whose creation answer for `network` the simulator loses (or not), as CONTRACT 5.4's hash decides. */
const merchantWhere = async (s: RunningServer, network: Network, loses: boolean): Promise<Merchant> => {
  for (let i = 0; i < 200; i++) {
    const m = await s.createMerchant()
    if (losesCreationAnswer(m.id, network) === loses) return m
  }
  throw new Error("no such merchant in 200 tries")
}

const expectWalletShape = (w: typeof DepositWallet.Type) => {
  expect(Object.keys(w).sort()).toEqual(["address", "can_deposit", "created_at", "currency", "id", "memo", "network", "provider", "status", "updated_at"])
  expect([w.provider, w.currency]).toEqual(["walletpay", "USDT"])
}

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
      const res = await request(server, m, body)
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
    const answers = await Promise.all(Array.from({ length: 20 }, () => request(server, m, { network: "bsc" })))
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
    const lost = await request(server, m, { network: "tron" })
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
    await setProvider(false)
    try {
      const down = await request(server, m, { network: "tron" })
      expect([down.status, codeOf(down)]).toEqual([502, "MERCHANT_WALLET_PROVIDER_UNAVAILABLE"])
      const [saved] = (await walletsOf(server, m)).wallets
      expect(saved).toMatchObject({ status: "prepared", address: null, can_deposit: false })
      const notStarted = await reconcile(server, m, saved!.id)
      expect([notStarted.status, codeOf(notStarted)]).toEqual([409, "WALLET_CREATION_NOT_STARTED"])
    } finally {
      await setProvider(true)
    }
    expect((await requested(server, m, "tron")).status).toBe("bound")
  })

  it("reconcile during an outage of a bound wallet is 502 and changes nothing", async () => {
    const m = await merchantWhere(server, "bsc", false)
    const bound = await requested(server, m, "bsc")
    await setProvider(false)
    try {
      const res = await reconcile(server, m, bound.id)
      expect([res.status, codeOf(res)]).toEqual([502, "MERCHANT_WALLET_PROVIDER_UNAVAILABLE"])
    } finally {
      await setProvider(true)
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
      const res = await reconcile(server, who, id)
      expect([id, res.status, codeOf(res)]).toEqual([id, 404, "MERCHANT_WALLET_NOT_FOUND"])
    }
  })

  it("refreshes a bound wallet's provider status (disabled: do not send funds) and never its address", async () => {
    const m = await merchantWhere(server, "tron", false)
    const bound = await requested(server, m, "tron")
    await setWalletStatus(bound.id, "disabled")
    // saved state only: the list still says what was last read
    expect((await walletsOf(server, m)).wallets[0]!.can_deposit).toBe(true)
    const disabled = await reconciled(server, m, bound.id)
    expect(disabled).toMatchObject({ id: bound.id, status: "bound", address: bound.address, can_deposit: false })
    expect((await walletsOf(server, m)).wallets[0]).toMatchObject({ can_deposit: false, address: bound.address })
    await setWalletStatus(bound.id, "active")
    expect(await reconciled(server, m, bound.id)).toMatchObject({ can_deposit: true, address: bound.address })
  })
})

describe("an inactive merchant", () => {
  it("gets 403 MERCHANT_NOT_ACTIVE on wallet mutations before any validation; reads still work and can_create is false", async () => {
    const m = await merchantWhere(server, "tron", false)
    const wallet = await requested(server, m, "tron")
    await setMerchantStatus(server, m.id, "inactive")
    for (const body of [{ network: "bsc" }, { network: "nope" }]) {
      const res = await request(server, m, body)
      expect([res.status, codeOf(res)]).toEqual([403, "MERCHANT_NOT_ACTIVE"])
    }
    expect(codeOf(await reconcile(server, m, wallet.id))).toBe("MERCHANT_NOT_ACTIVE")
    const listed = await walletsOf(server, m)
    expect([listed.can_create, listed.wallets.length]).toEqual([false, 1])
  })
})

describe("payments", () => {
  /** A merchant with a bound wallet on `network`. */
  const payee = async (network: Network) => {
    const m = await merchantWhere(server, network, false)
    const wallet = await requested(server, m, network)
    expect(wallet.status).toBe("bound")
    return { m, wallet }
  }
  /** POST /admin/simulator/wallets/{id}/payments as sent: where the refusal is the point. */
  const pay = (walletId: string, body: Record<string, unknown>) => server.admin(`/admin/simulator/wallets/${walletId}/payments`, { method: "POST", body })
  /** The payment through the typed client: the 202 WalletPaymentSent. */
  const paid = (walletId: string, amount: number, txId?: string) =>
    server.adminApi.call((client) => client.deposits.payWallet({ path: { id: walletId }, payload: { amount, ...(txId ? { tx_id: txId } : {}) } }))
  const depositsOf = async (m: Merchant) => (await server.merchant(m.apiKey).call((client) => client.deposits.listDeposits({ urlParams: {} }))).deposits

  it("102.50 USDT credits 101.47 and 6435 credits 6402.82 (tier commission), as walletpay deposits to the wallet's address, with balance.deposited", async () => {
    const { m, wallet } = await payee("tron")
    for (const [amount, credited, txId] of [[102.5, 101.47, `t-${randomUUID()}`], [6435, 6402.82, `t-${randomUUID()}`]] as const) {
      await paid(wallet.id, amount, txId)
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
    const { m, wallet } = await payee("bsc")
    const txId = `again-${randomUUID()}`
    const repeats = await metricValue(server, "wallet_payment_callbacks_total{outcome=\"repeat\"}")
    await paid(wallet.id, 50, txId)
    await pollUntil("credited", async () => (await depositsOf(m)).length === 1 ? true : undefined)
    await paid(wallet.id, 50, txId)
    await pollUntil(
      "the repeat seen",
      async () => (await metricValue(server, "wallet_payment_callbacks_total{outcome=\"repeat\"}")) > repeats ? true : undefined
    )
    expect(await depositsOf(m)).toHaveLength(1)
    expect((await balanceOf(server, m)).available).toBe(4950)
  })

  it("to a wallet the provider has disabled: recorded, not credited", async () => {
    const { m, wallet } = await payee("tron")
    await setWalletStatus(wallet.id, "disabled")
    const before = await metricValue(server, "wallet_payment_callbacks_total{outcome=\"wallet_disabled\"}")
    await paid(wallet.id, 100)
    await pollUntil(
      "the callback recorded",
      async () => (await metricValue(server, "wallet_payment_callbacks_total{outcome=\"wallet_disabled\"}")) > before ? true : undefined
    )
    expect(await depositsOf(m)).toEqual([])
    expect((await balanceOf(server, m)).totalDeposited).toBe(0)
  })

  it("a forged callback is 401 and changes nothing", async () => {
    const { m, wallet } = await payee("tron")
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
    await setProvider(false)
    const prepared = await request(server, m, { network: "tron" })
    await setProvider(true)
    expect(prepared.status).toBe(502)
    const [saved] = (await walletsOf(server, m)).wallets
    expect(codeOf(await pay(saved!.id, { amount: 10 }))).toBe("ADMIN_CONFLICT")
    expect((await pay(randomUUID(), { amount: 10 })).status).toBe(404)
    for (const amount of [0, -1, 1e-7, "10"]) {
      const res = await pay(saved!.id, { amount })
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

describe("switches and restarts", { timeout: 180_000 }, () => {
  let database: FreshDatabase
  beforeAll(async () => {
    database = await freshDatabase()
  })
  afterAll(async () => {
    await database?.drop()
  })

  it("issuance disabled: 409 MERCHANT_WALLET_ISSUANCE_DISABLED, can_create false; settlement unverified: the same; reconcile stays available", async () => {
    // (a bound wallet under either switch, and its reconcile: test/deposits/Wallets.test.ts)
    const [disabled, unverified] = await Promise.all([
      startServer({ env: PURCHASE_ENV }),
      startServer({ env: { ...ENV, WALLET_SETTLEMENT_VERIFIED: "false" } })
    ])
    try {
      for (const [s, issuance] of [[disabled, false], [unverified, true]] as const) {
        const m = await s.createMerchant()
        expect(await walletsOf(s, m)).toEqual({ issuance_enabled: issuance, can_create: false, wallets: [] })
        const refused = await request(s, m, { network: "bsc" })
        expect([refused.status, codeOf(refused)]).toEqual([409, "MERCHANT_WALLET_ISSUANCE_DISABLED"])
        // reconcile is there, whatever the switches: an unknown wallet is 404, not 409
        expect(codeOf(await reconcile(s, m, randomUUID()))).toBe("MERCHANT_WALLET_NOT_FOUND")
        expect((await walletsOf(s, m)).wallets).toEqual([])
      }
    } finally {
      await Promise.all([disabled.stop(), unverified.stop()])
    }
  })

  it("a process killed between saving the request and the provider's answer: on restart the request is creation_started, and reconcile binds the one provider wallet", async () => {
    // the simulated provider binds after 1 s x SIM_TIME_SCALE: 5 s to kill the process in
    const slow = await startServer({ env: { ...ENV, SIM_TIME_SCALE: "5" }, database })
    const m = await merchantWhere(slow, "bsc", false)
    const pending = request(slow, m, { network: "bsc" }).catch(() => undefined)
    const [started] = await pollUntil(
      "the request saved and its creation started",
      async () => {
        // the request is saved as prepared, then marked creation_started just before the provider call
        const listed = (await walletsOf(slow, m)).wallets
        return listed.length === 1 && listed[0]!.status === "creation_started" ? listed : undefined
      },
      30_000,
      20
    )
    slow.process.kill("SIGKILL")
    await new Promise((resolve) => slow.process.once("exit", resolve))
    await pending

    const restarted = await startServer({ env: ENV, database })
    try {
      expect((await walletsOf(restarted, m)).wallets).toMatchObject([{ id: started!.id, status: "creation_started", address: null, can_deposit: false }])
      // a repeat returns the saved request: the creation that started is never sent again
      expect(await requested(restarted, m, "bsc")).toMatchObject({ id: started!.id, status: "creation_started" })
      expect(await creations(restarted)).toBe(0)
      const bound = await pollUntil(
        "bound once the provider has bound it",
        async () => {
          // raw: whatever it answers before the provider has bound the wallet, polling goes on
          const res = await reconcile(restarted, m, started!.id)
          return field(res.json, "status") === "bound" ? bodyOf(res, DepositWallet) : undefined
        },
        30_000,
        200
      )
      expect(bound.address).toMatch(BSC)
      expect(await adminWallets(restarted, m)).toHaveLength(1)
    } finally {
      await restarted.stop()
    }
  })
})
