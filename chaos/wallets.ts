/**
 * Deposit wallet requests during the chaos run, as a merchant's integration makes them: POST
 * /deposits/wallets for a network on any node, again after no answer or a 5xx (a repeat returns
 * the saved request), and a reconcile of a request whose outcome is unknown. New merchants join
 * every few seconds, so wallet creations keep happening while the faults come.
 */
import { randomUUID } from "node:crypto"
import { sleep } from "../test/support/polling.js"
import type { Merchant } from "../test/support/purchase-requests.js"
import type { Cluster } from "./cluster.js"
import { type AnswerLog, codeOf } from "./report.js"

export const NETWORKS = ["tron", "bsc"] as const
export type Network = (typeof NETWORKS)[number]

/** A wallet answer (request or reconcile) that named a wallet. */
export interface WalletAnswer {
  readonly merchantId: string
  readonly network: Network
  readonly walletId: string
  readonly status: string
}

interface Wallet {
  readonly id: string
  readonly network: Network
  readonly status: string
}

const IN_PROGRESS = new Set(["creation_started", "requires_reconciliation"])
const NEW_MERCHANT_EVERY_MS = 3_000

export class WalletClients {
  readonly merchants: Array<Merchant> = []
  readonly named: Array<WalletAnswer> = []
  requests = 0
  private stopping = false
  private readonly loops: Array<Promise<void>>
  private lastMerchantAt = 0

  constructor(private readonly cluster: Cluster, private readonly answers: AnswerLog, clients: number) {
    this.loops = Array.from({ length: clients }, () => this.loop())
  }

  /** One request, as sent to a live node; undefined when no HTTP answer came. */
  private async send(method: "GET" | "POST", path: string, m: Merchant, network: Network, body?: unknown) {
    const node = await this.cluster.anyLive()
    this.requests += 1
    const res = await node.api(path, { method, key: m.apiKey, ...(body !== undefined && { body }) }).catch(() => undefined)
    const wallet = { merchantId: m.id, network }
    this.answers.push({ source: "wallet", admin: false, status: res?.status ?? 0, code: codeOf(res?.json), at: Date.now(), node: node.baseUrl, wallet })
    return res
  }

  private record(m: Merchant, wallet: Wallet | undefined) {
    if (wallet?.id !== undefined) this.named.push({ merchantId: m.id, network: wallet.network, walletId: wallet.id, status: wallet.status })
  }

  private async newMerchant() {
    this.lastMerchantAt = Date.now()
    const node = await this.cluster.anyLive()
    const res = await node.admin("/admin/merchants", { method: "POST", body: { name: `chaos-wallets-${randomUUID().slice(0, 8)}`, webhook_url: null } })
      .catch(() => undefined)
    // (a creation whose answer was lost leaves a merchant nobody knows the key of: it asks for no wallet)
    const created = res?.json as { merchant_id?: string; api_key?: string } | undefined
    if (res?.status === 201 && created?.merchant_id !== undefined && created.api_key !== undefined) {
      this.merchants.push({ id: created.merchant_id, apiKey: created.api_key })
    }
  }

  private async loop() {
    while (!this.stopping) {
      if (this.merchants.length === 0 || Date.now() - this.lastMerchantAt > NEW_MERCHANT_EVERY_MS) await this.newMerchant()
      const m = this.merchants[Math.floor(Math.random() * this.merchants.length)]
      if (m !== undefined) await this.wallet(m, NETWORKS[Math.floor(Math.random() * NETWORKS.length)]!)
      await sleep(100 + Math.floor(Math.random() * 200))
    }
  }

  /** Requests the merchant's wallet for `network` until an answer says what it is; reconciles one in progress. */
  private async wallet(m: Merchant, network: Network) {
    for (let attempt = 0; attempt < 5 && !this.stopping; attempt++) {
      const res = await this.send("POST", "/deposits/wallets", m, network, { network })
      if (res?.status === 200) {
        const wallet = res.json as Wallet
        this.record(m, wallet)
        if (IN_PROGRESS.has(wallet.status)) await this.reconcile(m, wallet)
        return
      }
      if (res !== undefined && res.status < 500) return
      // no answer or a 5xx (502: the provider's state unknown): read the saved request, reconcile it
      const listed = await this.send("GET", "/deposits/wallets", m, network)
      const saved = (listed?.json as { wallets?: Array<Wallet> } | undefined)?.wallets?.find((w) => w.network === network)
      if (saved !== undefined) {
        this.record(m, saved)
        if (IN_PROGRESS.has(saved.status)) await this.reconcile(m, saved)
        return
      }
      await sleep(Math.min(200 * 2 ** attempt, 1_000))
    }
  }

  private async reconcile(m: Merchant, wallet: Wallet) {
    const res = await this.send("POST", `/deposits/wallets/${wallet.id}/reconcile`, m, wallet.network)
    if (res?.status === 200) this.record(m, res.json as Wallet)
  }

  async stop(): Promise<void> {
    this.stopping = true
    await Promise.race([Promise.all(this.loops), sleep(30_000)])
  }
}
