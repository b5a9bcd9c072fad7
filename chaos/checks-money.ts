/**
 * The money invariants of a chaos run, read once every purchase has settled:
 * - balance: available + total_spent = total_deposited for every merchant, at the end and in every
 *   balance read during the run; on_hold is the in-flight purchases' prices; total_spent is the
 *   purchases' prices less their refunds;
 * - deposits: total_deposited is the funding plus the credits the admin API answered 201, once per
 *   tx_id (a repeat answers the same deposit), and GET /deposits lists each tx_id once;
 * - purchases: each buy request answered with a purchase has exactly that purchase (by-name: its
 *   attempts share the custom_id, the answered one among them, at most one not failed); no purchase
 *   exists that no answer named.
 */
import { cents } from "../test/support/purchase-requests.js"
import type { RunningServer } from "../test/support/server.js"
import type { Sent } from "../test/support/traffic.js"
import { allPages, settle } from "./reads.js"
import { type Check, tally } from "./report.js"
import type { TrafficMerchant, Workload } from "./workload.js"

interface Purchase {
  readonly purchase_id: string
  readonly custom_id: string
  readonly status: string
  readonly price: number
  readonly failure: { readonly code: string; readonly refunded_amount: number | null } | null
}

interface Deposit {
  readonly id: string
  readonly amount: number
  readonly tx_id: string | null
}

interface Balance {
  readonly available: number
  readonly on_hold: number
  readonly total_deposited: number
  readonly total_spent: number
}

const IN_FLIGHT = new Set(["created", "processing", "sent_to_steam"])
const usd = (c: number) => (c / 100).toFixed(2)

/** The purchase_id an answer names (PurchaseCreated, or PurchaseFailedResponse), if any. */
const answeredPurchase = (sent: Sent): string | undefined => {
  const id = (sent.last?.json as { purchase_id?: unknown } | undefined)?.purchase_id
  return typeof id === "string" ? id : undefined
}

export const moneyChecks = async (node: RunningServer, workload: Workload): Promise<Array<Check>> => {
  const { merchants } = workload
  const sent = workload.traffic.sent
  // every purchase terminal: nothing of it moves the balance any more
  const settled = await settle(async () => {
    const all = await Promise.all(merchants.map((m) => allPages<Purchase>(node, m.apiKey, "/purchases", "purchases")))
    return { done: all.every((list) => list.every((p) => !IN_FLIGHT.has(p.status))), value: all }
  }, 90_000)
  const purchases = new Map(merchants.map((m, i) => [m.id, settled.value[i]!]))
  const balances = new Map<string, Balance>()
  const deposits = new Map<string, Array<Deposit>>()
  for (const m of merchants) {
    balances.set(m.id, (await node.api("/balance", { key: m.apiKey })).json as Balance)
    deposits.set(m.id, await allPages<Deposit>(node, m.apiKey, "/deposits", "deposits"))
  }
  const inFlight = [...purchases.values()].flat().filter((p) => IN_FLIGHT.has(p.status)).length
  return [
    balanceCheck(merchants, purchases, balances, workload, settled.timedOut ? inFlight : 0),
    depositCheck(merchants, sent, balances, deposits),
    purchaseCheck(sent, purchases)
  ]
}

const balanceCheck = (
  merchants: ReadonlyArray<TrafficMerchant>,
  purchases: ReadonlyMap<string, ReadonlyArray<Purchase>>,
  balances: ReadonlyMap<string, Balance>,
  workload: Workload,
  stillInFlight: number
): Check => {
  const problems: Array<string> = []
  let deposited = 0
  let spent = 0
  for (const m of merchants) {
    const b = balances.get(m.id)!
    const [available, onHold, totalDeposited, totalSpent] = [b.available, b.on_hold, b.total_deposited, b.total_spent].map(cents) as [
      number,
      number,
      number,
      number
    ]
    const list = purchases.get(m.id)!
    const held = list.filter((p) => IN_FLIGHT.has(p.status)).reduce((sum, p) => sum + cents(p.price), 0)
    const paid = list.reduce((sum, p) => sum + cents(p.price) - cents(Math.max(0, p.failure?.refunded_amount ?? 0)), 0)
    deposited += totalDeposited
    spent += totalSpent
    const shown = `merchant ${m.id}: ${JSON.stringify(b)}`
    if (available + totalSpent !== totalDeposited) problems.push(`${shown}: available + total_spent = ${usd(available + totalSpent)}, not total_deposited`)
    if (onHold !== held) problems.push(`${shown}: on_hold is not the ${usd(held)} of its in-flight purchases`)
    if (totalSpent !== paid) problems.push(`${shown}: total_spent is not the ${usd(paid)} its purchases cost less their refunds`)
  }
  problems.push(...workload.brokenBalances.map((line) => `during the run: ${line}`))
  if (stillInFlight > 0) problems.push(`${stillInFlight} purchases still in flight 90 s after the traffic stopped`)
  return {
    name: "balance identity",
    figures: `${merchants.length} merchants: available + total_spent = total_deposited, on_hold = in-flight part, total_spent = prices less refunds ` +
      `(deposited ${usd(deposited)} USD, spent ${
        usd(spent)
      } USD); ${workload.balanceReads} balance reads during the run, ${workload.brokenBalances.length} broken`,
    problems
  }
}

const depositCheck = (
  merchants: ReadonlyArray<TrafficMerchant>,
  sent: ReadonlyArray<Sent>,
  balances: ReadonlyMap<string, Balance>,
  deposits: ReadonlyMap<string, ReadonlyArray<Deposit>>
): Check => {
  const problems: Array<string> = []
  const requests = sent.filter((s) => s.kind === "deposit")
  let credited = 0
  for (const m of merchants) {
    // the credits answered 201, by tx_id (a repeat of a credited tx_id answers the same deposit, 201)
    const answered = new Map<string, Deposit>([[m.funding.txId, { id: "", amount: m.funding.cents / 100, tx_id: m.funding.txId }]])
    for (const s of requests.filter((r) => r.merchant.id === m.id)) {
      const txId = s.body["tx_id"] as string
      if (s.last?.status === 201) answered.set(txId, s.last.json as Deposit)
      else problems.push(`deposit ${txId}: final answer ${s.statuses.at(-1)} ${s.last?.text.slice(0, 200) ?? "(none)"} after ${s.statuses.join(",")}`)
    }
    const expected = [...answered.values()].reduce((sum, d) => sum + cents(d.amount), 0)
    credited += answered.size - 1
    const total = cents(balances.get(m.id)!.total_deposited)
    if (total !== expected) problems.push(`merchant ${m.id}: total_deposited ${usd(total)}, the credits answered 201 add up to ${usd(expected)}`)
    const listed = deposits.get(m.id)!
    const byTx = new Map<string, number>()
    for (const d of listed) byTx.set(d.tx_id ?? "(null)", (byTx.get(d.tx_id ?? "(null)") ?? 0) + 1)
    for (const [txId, n] of byTx) if (n > 1) problems.push(`merchant ${m.id}: tx_id ${txId} credited ${n} times`)
    for (const d of listed) {
      const known = d.tx_id === null ? undefined : answered.get(d.tx_id)
      if (known === undefined) problems.push(`merchant ${m.id}: deposit ${d.id} (tx_id ${d.tx_id}) was never answered 201`)
      else if (known.id !== "" && known.id !== d.id) problems.push(`merchant ${m.id}: tx_id ${d.tx_id} answered deposit ${known.id}, listed ${d.id}`)
    }
    for (const txId of answered.keys()) if (!byTx.has(txId)) problems.push(`merchant ${m.id}: tx_id ${txId} answered 201 but not listed`)
  }
  const repeated = requests.filter((r) => r.statuses.length > 1).length
  return {
    name: "deposits once per tx_id",
    figures: `${requests.length} deposits sent (${repeated} repeated after a 5xx or no answer), ${credited} answered 201; ` +
      `total_deposited = funding + the credits answered 201 for every merchant; GET /deposits lists each tx_id once`,
    problems
  }
}

const purchaseCheck = (sent: ReadonlyArray<Sent>, purchases: ReadonlyMap<string, ReadonlyArray<Purchase>>): Check => {
  const problems: Array<string> = []
  const requests = new Map(sent.filter((s) => s.kind.startsWith("buy")).map((s) => [s.body["custom_id"] as string, s]))
  const byCustomId = new Map<string, Array<Purchase>>()
  for (const p of [...purchases.values()].flat()) byCustomId.set(p.custom_id, [...byCustomId.get(p.custom_id) ?? [], p])
  for (const [customId, found] of byCustomId) {
    const s = requests.get(customId)
    const ids = found.map((p) => p.purchase_id)
    if (s === undefined) {
      problems.push(`purchases ${ids.join(", ")} of custom_id ${customId}, which no request sent`)
      continue
    }
    const answered = answeredPurchase(s)
    const history = `${s.kind} ${customId} answered ${s.statuses.join(",")}`
    if (s.kind === "buy-by-name") {
      if (answered !== undefined && !ids.includes(answered)) problems.push(`${history}: named ${answered}, its purchases are ${ids.join(", ")}`)
      if (answered === undefined && found.some((p) => p.status !== "failed")) {
        problems.push(`${history}: no answer named a purchase, yet ${ids.join(", ")} exist`)
      }
      if (found.filter((p) => p.status !== "failed").length > 1) problems.push(`${history}: more than one attempt not failed: ${ids.join(", ")}`)
    } else if (answered === undefined) {
      problems.push(`${history}: no answer named a purchase, yet ${ids.join(", ")} exist`)
    } else if (ids.length !== 1 || ids[0] !== answered) {
      problems.push(`${history}: named ${answered}, the purchases of its custom_id are ${ids.join(", ")}`)
    }
  }
  for (const [customId, s] of requests) {
    const answered = answeredPurchase(s)
    if (answered !== undefined && !byCustomId.has(customId)) problems.push(`${s.kind} ${customId} answered ${answered}, which does not exist`)
    if (s.last === undefined || s.last.status >= 500) problems.push(`${s.kind} ${customId}: no final answer (${s.statuses.join(",")})`)
  }
  const kinds = ["buy", "buy-sync", "buy-by-name"] as const
  const finals = kinds.map((kind) => `${kind} ${tally(sent.filter((s) => s.kind === kind).map((s) => s.statuses.at(-1)!))}`).join("; ")
  const repeated = [...requests.values()].filter((s) => s.statuses.length > 1).length
  const attempts = [...byCustomId.values()].filter((found) => found.length > 1).length
  return {
    name: "purchases exactly once",
    figures: `${requests.size} buy requests (${repeated} repeated after a 5xx or no answer), ${[...purchases.values()].flat().length} purchases ` +
      `(${attempts} by-name cycles with more than one attempt); final answers: ${finals}`,
    problems
  }
}
