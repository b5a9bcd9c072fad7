/**
 * Deposit wallets under the service's switches and across a crash (CONTRACT 5.4): with issuance
 * disabled or settlement unverified a request is refused and reconcile stays available; a process
 * killed between saving a request and the provider's answer leaves it creation_started, and a
 * reconcile after the restart binds the one provider wallet.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DepositWallet } from "../../src/Deposits/Api.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { bodyOf, codeOf, field } from "../support/expectations.js"
import { pollUntil, PURCHASE_ENV } from "../support/purchases.js"
import { startServer } from "../support/server.js"
import { adminWallets, BSC, creations, merchantWhere, postReconcile, postWallet, requested, WALLET_ENV, walletsOf } from "../support/wallets.js"

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
      startServer({ env: { ...WALLET_ENV, WALLET_SETTLEMENT_VERIFIED: "false" } })
    ])
    try {
      for (const [s, issuance] of [[disabled, false], [unverified, true]] as const) {
        const m = await s.createMerchant()
        expect(await walletsOf(s, m)).toEqual({ issuance_enabled: issuance, can_create: false, wallets: [] })
        const refused = await postWallet(s, m, { network: "bsc" })
        expect([refused.status, codeOf(refused)]).toEqual([409, "MERCHANT_WALLET_ISSUANCE_DISABLED"])
        // reconcile is there, whatever the switches: an unknown wallet is 404, not 409
        expect(codeOf(await postReconcile(s, m, randomUUID()))).toBe("MERCHANT_WALLET_NOT_FOUND")
        expect((await walletsOf(s, m)).wallets).toEqual([])
      }
    } finally {
      await Promise.all([disabled.stop(), unverified.stop()])
    }
  })

  it("a process killed between saving the request and the provider's answer: on restart the request is creation_started, and reconcile binds the one provider wallet", async () => {
    // the simulated provider binds after 1 s x SIM_TIME_SCALE: 5 s to kill the process in
    const slow = await startServer({ env: { ...WALLET_ENV, SIM_TIME_SCALE: "5" }, database })
    const m = await merchantWhere(slow, "bsc", false)
    const pending = postWallet(slow, m, { network: "bsc" }).catch(() => undefined)
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

    const restarted = await startServer({ env: WALLET_ENV, database })
    try {
      expect((await walletsOf(restarted, m)).wallets).toMatchObject([{ id: started!.id, status: "creation_started", address: null, can_deposit: false }])
      // a repeat returns the saved request: the creation that started is never sent again
      expect(await requested(restarted, m, "bsc")).toMatchObject({ id: started!.id, status: "creation_started" })
      expect(await creations(restarted)).toBe(0)
      const bound = await pollUntil(
        "bound once the provider has bound it",
        async () => {
          // raw: whatever it answers before the provider has bound the wallet, polling goes on
          const res = await postReconcile(restarted, m, started!.id)
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
