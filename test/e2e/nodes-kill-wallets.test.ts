/**
 * Deposit wallets on two nodes sharing one PostgreSQL: concurrent requests for the same merchant
 * and network on both nodes at once, one node killed with SIGKILL while they are in flight, give
 * one provider wallet per merchant and network. Every answered request names that one wallet
 * (possibly still in progress), never a second one; after a reconcile the wallet is bound.
 *
 * The simulated provider keeps its wallets in its own tables of the database (as a real provider
 * keeps them on its side), keyed by the idempotency key: they are what both processes see, and
 * what outlives a kill, so its wallets are counted there. (The service's own count of creation
 * calls, wallet_provider_calls_total, is per process and lost with a killed one.)
 */
import { afterEach, describe, expect, it } from "vitest"
import { DepositWallet } from "../../src/Deposits/Api.js"
import { losesCreationAnswer } from "../../src/Providers/Simulator/WalletProviderSim.js"
import { freshDatabase } from "../support/database.js"
import { bodyOf, codeOf, field } from "../support/expectations.js"
import { type TwoNodes, twoNodes } from "../support/nodes.js"
import { withStoppedDatabase } from "../support/purchases-db.js"
import { type Merchant, pollUntil, PURCHASE_ENV, sleep } from "../support/purchases.js"
import type { JsonResponse, RunningServer } from "../support/server.js"

/** The simulated provider answers a creation 2 s after it (1 s x SIM_TIME_SCALE): the time to kill a node in. */
const ENV = { ...PURCHASE_ENV, WALLET_ISSUANCE_ENABLED: "true", SIM_TIME_SCALE: "2" }
const IN_PROGRESS = ["prepared", "creation_started", "requires_reconciliation"]
const TRON = /^T[1-9A-HJ-NP-Za-km-z]{33}$/

const cleanup: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined)
})

interface Answer {
  readonly merchant: Merchant
  /** The node's slot (0 or 1). */
  readonly node: number
  /** Undefined when no HTTP answer came (the node died). */
  readonly res: JsonResponse | undefined
}

/** POST /deposits/wallets for tron as sent; undefined when no HTTP answer came. */
const requestWallet = (s: RunningServer, m: Merchant) =>
  s.api("/deposits/wallets", { method: "POST", key: m.apiKey, body: { network: "tron" } }).catch(() => undefined)

/** `perNode` requests for each merchant on each node, all at once, and how many each node has not answered yet. */
const wave = (nodes: TwoNodes, merchants: ReadonlyArray<Merchant>, perNode: number) => {
  const pending = [0, 0]
  const answers = Promise.all(merchants.flatMap((merchant) =>
    [0, 1].flatMap((node) =>
      Array.from({ length: perNode }, async (): Promise<Answer> => {
        const s = nodes.node(node)
        pending[node]! += 1
        const res = s === undefined ? undefined : await requestWallet(s, merchant)
        pending[node]! -= 1
        return { merchant, node, res }
      })
    )
  ))
  return { answers, pending: (node: number) => pending[node]! }
}

/** `n` new merchants, `losers` of them ones whose creation answer the simulator loses (502, then requires_reconciliation). */
const merchantsOf = async (server: RunningServer, n: number, losers: number, losing: Set<string>) => {
  const found: Array<Merchant> = []
  let lost = 0
  while (found.length < n) {
    const m = await server.createMerchant()
    const loses = losesCreationAnswer(m.id, "tron")
    if (loses ? lost >= losers : found.length - lost >= n - losers) continue
    found.push(m)
    if (loses) {
      lost += 1
      losing.add(m.id)
    }
  }
  return found
}

describe.runIf(process.env["DATABASE_URL"])("wallet requests on two nodes on one PostgreSQL (DATABASE_URL only), one killed meanwhile", {
  timeout: 180_000
}, () => {
  it("one provider wallet per merchant and network; every answer names it or says it is in progress; reconciled, it is bound", async () => {
    const database = await freshDatabase()
    cleanup.push(() => database.drop())
    const nodes = await twoNodes(database, ENV)
    cleanup.push(() => nodes.killAll())

    // Two rounds, each with new merchants beside the earlier ones: a wave of requests on both
    // nodes, then, at a random moment while they are in flight (a creation takes 2 s, so the one
    // request per new merchant that calls the provider is still open), a node with requests open
    // is killed and started again. The second round also finds what the first kill left behind.
    const losing = new Set<string>()
    const merchants: Array<Merchant> = []
    const answers: Array<Answer> = []
    const kills: Array<{ node: number; open: number }> = []
    for (let round = 0; round < 2; round++) {
      merchants.push(...await merchantsOf(await nodes.anyLive(), 6, 2, losing))
      const { answers: settled, pending } = wave(nodes, merchants, 4)
      await sleep(200 + Math.random() * 1_500)
      const open = [0, 1].filter((node) => pending(node) > 0)
      const victim = open[Math.floor(Math.random() * open.length)]!
      kills.push({ node: victim, open: pending(victim) })
      const killing = nodes.killAndRestart(victim)
      for (const a of await settled) {
        // (only the killed node's requests may go unanswered)
        if (a.res === undefined) expect(a.node, "a request to the node that stayed up went unanswered").toBe(victim)
        answers.push(a)
      }
      await killing
    }
    expect(kills.every((k) => k.open > 0)).toBe(true)

    // Reconcile each merchant's wallet until bound; one whose creation never reached the provider
    // (the node died first) is prepared again by the reconcile and is then requested again.
    const server = await nodes.anyLive()
    const bound = new Map<string, typeof DepositWallet.Type>()
    for (const m of merchants) {
      const listed = await server.merchant(m.apiKey).call((client) => client.deposits.listWallets())
      expect(listed.wallets, "one saved request per merchant and network").toHaveLength(1)
      const id = listed.wallets[0]!.id
      bound.set(
        m.id,
        await pollUntil(
          `merchant ${m.id}'s wallet bound`,
          async () => {
            const res = await server.api(`/deposits/wallets/${id}/reconcile`, { method: "POST", key: m.apiKey })
            if (field(res.json, "status") === "bound") return bodyOf(res, DepositWallet)
            if (field(res.json, "status") === "prepared") await requestWallet(server, m)
            return undefined
          },
          60_000,
          200
        )
      )
    }

    // a last wave on both nodes: every answer is the one bound wallet
    answers.push(...await wave(nodes, merchants, 2).answers)

    const unanswered = answers.filter((a) => a.res === undefined).length
    const lostAnswers = new Map<string, number>()
    for (const { merchant, res } of answers) {
      if (res === undefined) continue
      const wallet = bound.get(merchant.id)!
      if (res.status === 502) {
        // the one request that made the creation whose answer the simulator loses
        expect([merchant.id, codeOf(res), losing.has(merchant.id)]).toEqual([merchant.id, "MERCHANT_WALLET_PROVIDER_UNAVAILABLE", true])
        lostAnswers.set(merchant.id, (lostAnswers.get(merchant.id) ?? 0) + 1)
        continue
      }
      expect([merchant.id, res.status]).toEqual([merchant.id, 200])
      const answered = bodyOf(res, DepositWallet)
      expect([merchant.id, answered.id]).toEqual([merchant.id, wallet.id])
      if (answered.status === "bound") expect(answered.address).toBe(wallet.address)
      else expect(IN_PROGRESS).toContain(answered.status)
    }
    for (const [id, n] of lostAnswers) expect([id, n]).toEqual([id, 1])
    console.log(
      `wallets across two nodes: ${answers.length} requests, ${unanswered} unanswered (kills, with the requests open on the node: ${JSON.stringify(kills)}), ${
        [...lostAnswers.values()].reduce((a, b) => a + b, 0)
      } lost creation answers (502)`
    )
    await nodes.stopAll()

    // the provider's side: one wallet per merchant and network, the one bound to the saved request
    const rows = await withStoppedDatabase(
      database,
      (query) =>
        query<{ merchant_id: string; idempotency_key: string; provider_wallet_id: string; address: string; wallet_id: string | null }>(
          `SELECT p.merchant_id, p.idempotency_key, p.provider_wallet_id, p.address, w.id AS wallet_id
         FROM sim_wallet_provider_wallets p
         LEFT JOIN deposit_wallets w ON w.provider_wallet_id = p.provider_wallet_id AND w.status = 'bound'
         WHERE p.network = 'tron' ORDER BY p.merchant_id`
        )
    )
    expect(rows.map((r) => r.merchant_id)).toEqual(merchants.map((m) => m.id).sort())
    for (const row of rows) {
      const wallet = bound.get(row.merchant_id)!
      expect(row).toEqual({ ...row, idempotency_key: `dw_${wallet.id}`, address: wallet.address, wallet_id: wallet.id })
      expect(row.address).toMatch(TRON)
    }
  })
})
