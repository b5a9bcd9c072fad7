/**
 * Deposit wallets from a merchant's and an operator's side (spec 3.2, 4.1; CONTRACT 5.4): requests
 * and reconciles through the typed clients or as sent, the simulated provider switched up or down,
 * its creation calls counted from /metrics, and merchants picked by whether the simulator loses
 * their creation answer.
 */
import { expect } from "vitest"
import type { DepositWallet } from "../../src/Deposits/Api.js"
import { losesCreationAnswer } from "../../src/Providers/Simulator/WalletProviderSim.js"
import { type Merchant, PURCHASE_ENV } from "./purchases.js"
import { metricValue, type RunningServer } from "./server.js"

/** The purchase tests' settings with wallet issuance on. */
export const WALLET_ENV = { ...PURCHASE_ENV, WALLET_ISSUANCE_ENABLED: "true" }
export type Network = "tron" | "bsc"
export const TRON = /^T[1-9A-HJ-NP-Za-km-z]{33}$/
export const BSC = /^0x[0-9a-f]{40}$/

/** GET /deposits/wallets through the typed client (a 200 DepositWalletList). */
export const walletsOf = (s: RunningServer, m: Merchant) => s.merchant(m.apiKey).call((client) => client.deposits.listWallets())
/** POST /deposits/wallets as sent: for bodies that are not valid, and where the status (200, 502, 409) is the point. */
export const postWallet = (s: RunningServer, m: Merchant, body: unknown) => s.api("/deposits/wallets", { method: "POST", key: m.apiKey, body })
/** POST /deposits/wallets through the typed client: the 200 DepositWallet. */
export const requested = (s: RunningServer, m: Merchant, network: Network) =>
  s.merchant(m.apiKey).call((client) => client.deposits.requestWallet({ payload: { network } }))
/** POST /deposits/wallets/{id}/reconcile as sent: for ids that are not valid, and where the status is the point. */
export const postReconcile = (s: RunningServer, m: Merchant, id: string) => s.api(`/deposits/wallets/${id}/reconcile`, { method: "POST", key: m.apiKey })
/** The reconcile through the typed client: the 200 DepositWallet. */
export const reconciled = (s: RunningServer, m: Merchant, walletId: string) =>
  s.merchant(m.apiKey).call((client) => client.deposits.reconcileWallet({ path: { walletId } }))
/** GET /admin/merchants/{id}/wallets through the typed client. */
export const adminWallets = async (s: RunningServer, m: Merchant) =>
  (await s.adminApi.call((client) => client.deposits.listMerchantWallets({ path: { id: m.id } }))).wallets
/** The simulated wallet provider up or down (PUT /admin/simulator/wallet-provider, 200). */
export const setWalletProvider = (s: RunningServer, available: boolean) =>
  s.adminApi.call((client) => client.deposits.setWalletProvider({ payload: { available } }))
/** A simulated wallet's provider status (POST /admin/simulator/wallets/{id}/status, 200). */
export const setWalletStatus = (s: RunningServer, walletId: string, status: "active" | "disabled") =>
  s.adminApi.call((client) => client.deposits.setWalletStatus({ path: { id: walletId }, payload: { status } }))
/** The wallet provider's creation calls so far, whatever their outcome. */
export const creations = (s: RunningServer) =>
  Promise.all(["ok", "answer_lost", "unavailable"].map((o) => metricValue(s, `wallet_provider_calls_total{call="create",outcome="${o}"}`)))
    .then((counts) => counts.reduce((a, b) => a + b, 0))

/** A merchant whose creation answer for `network` the simulator loses (or not), as CONTRACT 5.4's hash decides. */
export const merchantWhere = async (s: RunningServer, network: Network, loses: boolean): Promise<Merchant> => {
  for (let i = 0; i < 200; i++) {
    const m = await s.createMerchant()
    if (losesCreationAnswer(m.id, network) === loses) return m
  }
  throw new Error("no such merchant in 200 tries")
}

export const expectWalletShape = (w: typeof DepositWallet.Type) => {
  expect(Object.keys(w).sort()).toEqual(["address", "can_deposit", "created_at", "currency", "id", "memo", "network", "provider", "status", "updated_at"])
  expect([w.provider, w.currency]).toEqual(["walletpay", "USDT"])
}

/** A merchant with a bound wallet on `network`. */
export const payee = async (s: RunningServer, network: Network) => {
  const m = await merchantWhere(s, network, false)
  const wallet = await requested(s, m, network)
  expect(wallet.status).toBe("bound")
  return { m, wallet }
}
/** POST /admin/simulator/wallets/{id}/payments as sent: where the refusal is the point. */
export const postPayment = (s: RunningServer, walletId: string, body: Record<string, unknown>) =>
  s.admin(`/admin/simulator/wallets/${walletId}/payments`, { method: "POST", body })
/** A payment to the wallet through the typed client: the 202 WalletPaymentSent. */
export const paid = (s: RunningServer, walletId: string, amount: number, txId?: string) =>
  s.adminApi.call((client) => client.deposits.payWallet({ path: { id: walletId }, payload: { amount, ...(txId ? { tx_id: txId } : {}) } }))
