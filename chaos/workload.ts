/**
 * The chaos run's merchants and their traffic: funded merchants with webhook URLs buying on all
 * three paths, depositing and changing the catalogue (test/support/traffic.ts: every request
 * repeated after a 5xx or no answer with the same custom_id, tx_id or items), a restocker that keeps
 * items to buy in the catalogue, and balance reads that check the identity at every moment.
 */
import { randomUUID } from "node:crypto"
import { sleep } from "../test/support/polling.js"
import { cents, itemOf, type Merchant, type PurchaseItemInput, sentCentsFor } from "../test/support/purchase-requests.js"
import { Traffic } from "../test/support/traffic.js"
import type { Receiver } from "../test/support/webhooks.js"
import type { Cluster } from "./cluster.js"
import { type AnswerLog, codeOf } from "./report.js"

export interface TrafficMerchant extends Merchant {
  readonly webhookSecret: string
  /** The receiver's path its webhooks go to. */
  readonly path: string
  /** The deposit that funded it before the traffic (tx_id and credited cents). */
  readonly funding: { readonly txId: string; readonly cents: number }
}

/** The price of an item to buy (cents); by-name's unavailable decoys are cheaper, so they are tried first. */
const PRICE = 100
const DECOY_PRICE = 90

/** PUT /admin/catalogue/items on any live node until it answers 200 (the same items each time: idempotent). */
const putItems = async (cluster: Cluster, items: ReadonlyArray<PurchaseItemInput>, answers: AnswerLog) => {
  for (let attempt = 0;; attempt++) {
    const node = await cluster.anyLive()
    const res = await node.admin("/admin/catalogue/items", { method: "PUT", body: { items } }).catch(() => undefined)
    answers.push({ source: "restock", admin: true, status: res?.status ?? 0, code: codeOf(res?.json), at: Date.now(), node: node.baseUrl })
    if (res?.status === 200) return
    if (res !== undefined && res.status < 500) throw new Error(`PUT /admin/catalogue/items: ${res.status} ${res.text.slice(0, 300)}`)
    await sleep(Math.min(200 * 2 ** attempt, 1_000))
  }
}

/** Waits until every live node lists the item named `name` (the catalogue engines tail the change log). */
const listedEverywhere = async (cluster: Cluster, apiKey: string, name: string) => {
  const deadline = Date.now() + 60_000
  for (const node of cluster.live()) {
    while (Date.now() < deadline) {
      const res = await node.api(`/items/search?market_hash_name=${encodeURIComponent(name)}`, { key: apiKey }).catch(() => undefined)
      if ((res?.json as { results?: Array<unknown> } | undefined)?.results?.length === 1) break
      await sleep(100)
    }
  }
}

export class Workload {
  /** Started once the first items are listed on every node. */
  traffic!: Traffic
  /** Item ids not bought yet, taken by /buy and /buy-sync. */
  private readonly itemIds: Array<string> = []
  readonly byName = `Chaos | ${randomUUID().slice(0, 8)} (Field-Tested)`
  /** Balance reads whose figures broke the identity. */
  readonly brokenBalances: Array<string> = []
  balanceReads = 0
  itemsAdded = 0
  private stopping = false
  private readonly loops: Array<Promise<void>> = []
  /** Catalogue writes of the traffic: items never bought (decoys), new or with a new price. */
  private readonly decor: Array<PurchaseItemInput> = []

  private constructor(
    private readonly cluster: Cluster,
    readonly merchants: ReadonlyArray<TrafficMerchant>,
    private readonly answers: AnswerLog
  ) {}

  /** `options.merchants` funded merchants with webhooks to `receiver`, the first items, then the traffic. */
  static async start(cluster: Cluster, receiver: Receiver, answers: AnswerLog, options: { merchants: number; clients: number }): Promise<Workload> {
    const node = await cluster.anyLive()
    const merchants = await Promise.all(Array.from({ length: options.merchants }, async (_, i) => {
      const path = `/chaos/${i}/${randomUUID()}`
      const m = await node.createMerchant(`chaos-${i}-${randomUUID().slice(0, 6)}`, receiver.url(path))
      const txId = `chaos-funding-${randomUUID()}`
      const deposit = await node.deposit(m.id, sentCentsFor(FUNDED_CENTS) / 100, txId)
      return { id: m.id, apiKey: m.apiKey, webhookSecret: m.webhookSecret, path, funding: { txId, cents: cents(deposit.amount) } }
    }))
    const workload = new Workload(cluster, merchants, answers)
    await workload.restock(STOCK)
    const stock = { itemIds: workload.itemIds, byName: workload.byName, merchants, newItem: () => workload.decorItem() }
    workload.traffic = new Traffic(cluster.servers, stock, options.clients)
    workload.loops.push(workload.restocker(), workload.balanceReader())
    return workload
  }

  /** Adds `n` items to buy by id, a third as many under the by-name name and a few decoys there. */
  private async restock(n: number) {
    const byName = Array.from({ length: Math.ceil(n / 3) }, () => itemOf(PRICE, { id: randomUUID(), market_hash_name: this.byName }))
    const decoys = Array.from(
      { length: Math.ceil(n / 20) },
      () => itemOf(DECOY_PRICE, { id: randomUUID(), market_hash_name: this.byName, sim: { acquire: "unavailable" } })
    )
    const toBuy = Array.from({ length: n }, () => itemOf(PRICE, { id: randomUUID() }))
    // in this order in the change log: once the last is listed on a node, so is the rest
    await putItems(this.cluster, [...byName, ...decoys, ...toBuy], this.answers)
    await listedEverywhere(this.cluster, this.merchants[0]!.apiKey, toBuy.at(-1)!.market_hash_name)
    this.itemIds.push(...toBuy.map((item) => item.id!))
    this.itemsAdded += byName.length + decoys.length + toBuy.length
  }

  private async restocker() {
    while (!this.stopping) {
      if (this.itemIds.length < STOCK / 2) await this.restock(STOCK).catch(() => sleep(1_000))
      await sleep(250)
    }
  }

  /** A decoy item for a catalogue write: a new one, or a known one with a new price. */
  private decorItem(): Record<string, unknown> {
    const known = this.decor.length > 0 && Math.random() < 0.5 ? this.decor[Math.floor(Math.random() * this.decor.length)]! : undefined
    const item = known === undefined
      ? itemOf(500, { id: randomUUID(), market_hash_name: `Chaos Decor | ${randomUUID().slice(0, 8)}`, sim: { acquire: "unavailable" } })
      : { ...known, price: (500 + Math.floor(Math.random() * 500)) / 100 }
    if (known === undefined) this.decor.push(item)
    return { ...item }
  }

  /** GET /balance of a random merchant on a random node, twice a second: available + total_spent = total_deposited every time. */
  private async balanceReader() {
    while (!this.stopping) {
      const m = this.merchants[Math.floor(Math.random() * this.merchants.length)]!
      const node = await this.cluster.anyLive()
      const res = await node.api("/balance", { key: m.apiKey }).catch(() => undefined)
      this.answers.push({ source: "balance", admin: false, status: res?.status ?? 0, code: codeOf(res?.json), at: Date.now(), node: node.baseUrl })
      if (res?.status === 200) {
        this.balanceReads += 1
        const b = res.json as { available: number; on_hold: number; total_deposited: number; total_spent: number }
        const [available, onHold, deposited, spent] = [b.available, b.on_hold, b.total_deposited, b.total_spent].map(cents)
        if (available! + spent! !== deposited || onHold! < 0 || onHold! > spent!) this.brokenBalances.push(`merchant ${m.id}: ${res.text}`)
      }
      await sleep(500)
    }
  }

  /** Stops the restocker, the balance reads and the traffic; false when the traffic's requests had no final answer within `timeoutMs`. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopping = true
    const done = await Promise.race([this.traffic.stop().then(() => true), sleep(timeoutMs).then(() => false)])
    await Promise.race([Promise.all(this.loops), sleep(5_000)])
    return done
  }
}

/** What each merchant is funded with before the traffic (cents). */
export const FUNDED_CENTS = 50_000
/** Items to buy by id kept in stock: a restock adds this many when half are gone. */
const STOCK = 300
