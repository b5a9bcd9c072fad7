/**
 * What the chaos run's clients were given, checked once the service has settled:
 * - webhooks: every event of the audit log (GET /webhook-events, all pages) delivered, received at
 *   least once with a valid signature (checked as it arrived), duplicates under 1 %;
 * - feed: each feed client's catalogue (the dump it loaded plus the changes it applied) equals the
 *   catalogue GET /items lists on every node, with no message out of order on the way;
 * - wallets: one wallet per merchant and network, in the service (GET /deposits/wallets) and at the
 *   simulated provider (its own table), and every answer named that one.
 */
import pg from "pg"
import { metricValue, type RunningServer } from "../test/support/server.js"
import { headerOf, type Receiver, verdictOf } from "../test/support/webhooks.js"
import type { Cluster } from "./cluster.js"
import type { FeedFollower } from "./feeds.js"
import { allPages, catalogueDifference, settle, walkCatalogue } from "./reads.js"
import { type Check, tally } from "./report.js"
import type { WalletClients } from "./wallets.js"
import type { TrafficMerchant } from "./workload.js"

interface WebhookEvent {
  readonly id: string
  readonly event_type: string
  readonly delivery_status: string
}

export const webhookCheck = async (node: RunningServer, merchants: ReadonlyArray<TrafficMerchant>, receiver: Receiver): Promise<Check> => {
  const settled = await settle(async () => {
    const all = await Promise.all(merchants.map((m) => allPages<WebhookEvent>(node, m.apiKey, "/webhook-events", "events")))
    return { done: all.every((events) => events.every((e) => e.delivery_status === "delivered")), value: all }
  }, 120_000)
  const problems: Array<string> = []
  let events = 0
  let deliveries = 0
  let duplicates = 0
  for (const [i, m] of merchants.entries()) {
    const log = settled.value[i]!
    const received = new Map<string, Array<string>>()
    for (const d of receiver.deliveries.filter((d) => d.path === m.path)) {
      const id = headerOf(d.headers, "x-event-id") ?? "(no X-Event-Id)"
      received.set(id, [...received.get(id) ?? [], verdictOf(d, m.webhookSecret, "x-signature", true)])
      deliveries += 1
    }
    for (const e of log) {
      const verdicts = received.get(e.id) ?? []
      if (e.delivery_status !== "delivered") problems.push(`merchant ${m.id}: event ${e.event_type} ${e.id} is ${e.delivery_status}`)
      if (!verdicts.includes("valid")) {
        problems.push(`merchant ${m.id}: event ${e.event_type} ${e.id} never arrived with a valid signature (${tally(verdicts)})`)
      }
      duplicates += Math.max(0, verdicts.length - 1)
    }
    const logged = new Set(log.map((e) => e.id))
    for (const [id, verdicts] of received) {
      if (!logged.has(id)) problems.push(`merchant ${m.id}: received event ${id}, not in the audit log`)
      for (const verdict of verdicts.filter((v) => v !== "valid")) problems.push(`merchant ${m.id}: a delivery of ${id} with the verdict ${verdict}`)
    }
    events += log.length
  }
  const rate = events === 0 ? 0 : duplicates / events
  if (rate >= 0.01) problems.push(`${duplicates} duplicate deliveries for ${events} events: ${(rate * 100).toFixed(2)} %, not under 1 %`)
  if (events === 0) problems.push("no events at all")
  return {
    name: "webhooks delivered",
    figures: `${events} events of ${merchants.length} merchants, all delivered and received signed; ${deliveries} deliveries, ` +
      `${duplicates} duplicates (${(rate * 100).toFixed(2)} %)${settled.timedOut ? "; not all delivered 120 s after the traffic stopped" : ""}`,
    problems
  }
}

/** The change-log head every node has reached, once they agree; undefined if they do not within 60 s. */
const commonHead = async (cluster: Cluster): Promise<number | undefined> => {
  const agreed = await settle(async () => {
    const heads = await Promise.all(cluster.live().map((node) => metricValue(node, "catalogue_cursor")))
    return { done: heads.length > 0 && heads.every((h) => h === heads[0]), value: heads[0] }
  }, 60_000)
  return agreed.timedOut ? undefined : agreed.value
}

export const feedCheck = async (cluster: Cluster, followers: ReadonlyArray<FeedFollower>, key: string): Promise<Check> => {
  const problems: Array<string> = []
  const head = await commonHead(cluster)
  if (head === undefined) problems.push("the nodes' catalogue cursors did not agree within 60 s")
  for (const [i, f] of followers.entries()) {
    if (head !== undefined && !await f.reach(head, 60_000)) problems.push(`feed client ${i}: at cursor ${f.cursor}, not at the head ${head} after 60 s`)
  }
  const nodes = cluster.live()
  const catalogues = await Promise.all(nodes.map((node) => walkCatalogue(node, key)))
  const catalogue = catalogues[0]!
  for (const [i, other] of catalogues.entries()) {
    for (const problem of catalogueDifference(other, catalogue).slice(0, 5)) problems.push(`node ${i}'s GET /items against node 0's: ${problem}`)
  }
  for (const [i, f] of followers.entries()) {
    for (const violation of f.violations) problems.push(`feed client ${i}: ${violation}`)
    const difference = catalogueDifference(f.items, catalogue)
    if (difference.length > 0) problems.push(`feed client ${i}: ${difference.length} items differ from GET /items, e.g. ${difference.slice(0, 3).join("; ")}`)
  }
  const sum = (count: (f: FeedFollower) => number) => followers.reduce((total, f) => total + count(f), 0)
  return {
    name: "feed equals the catalogue",
    figures: `${followers.length} clients at cursor ${head ?? "?"} = GET /items (${catalogue.size} items, all pages, on ${nodes.length} nodes); ` +
      `${sum((f) => f.changesApplied)} changes applied, ${sum((f) => f.sessions)} sessions (closes: ${tally(followers.flatMap((f) => f.closes))}), ` +
      `${sum((f) => f.failedConnects)} failed connects, ${sum((f) => f.bootstraps)} dump loads, resets: ${tally(followers.flatMap((f) => f.resets))}`,
    problems
  }
}

interface ProviderWallet extends Record<string, unknown> {
  readonly merchant_id: string
  readonly network: string
  readonly idempotency_key: string
}

export const walletCheck = async (node: RunningServer, wallets: WalletClients, databaseUrl: string): Promise<Check> => {
  const problems: Array<string> = []
  const saved = new Map<string, { id: string; status: string }>()
  for (const m of wallets.merchants) {
    const listed = (await node.api("/deposits/wallets", { key: m.apiKey })).json as { wallets: Array<{ id: string; network: string; status: string }> }
    for (const network of ["tron", "bsc"]) {
      const mine = listed.wallets.filter((w) => w.network === network)
      if (mine.length > 1) problems.push(`merchant ${m.id}: ${mine.length} ${network} wallets`)
      if (mine[0] !== undefined) saved.set(`${m.id} ${network}`, mine[0])
    }
  }
  for (const a of wallets.named) {
    const wallet = saved.get(`${a.merchantId} ${a.network}`)
    if (wallet?.id !== a.walletId) {
      problems.push(`merchant ${a.merchantId}: an answer named ${a.network} wallet ${a.walletId}, the saved one is ${wallet?.id ?? "none"}`)
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const provider = await client.query<ProviderWallet>("SELECT merchant_id, network, idempotency_key FROM sim_wallet_provider_wallets").finally(() =>
    client.end()
  )
  const perKey = new Map<string, Array<string>>()
  for (const row of provider.rows) {
    perKey.set(`${row.merchant_id} ${row.network}`, [...perKey.get(`${row.merchant_id} ${row.network}`) ?? [], row.idempotency_key])
  }
  for (const [key, keys] of perKey) {
    if (keys.length > 1) problems.push(`merchant and network ${key}: ${keys.length} wallets at the provider`)
    const wallet = saved.get(key)
    if (wallet === undefined || keys[0] !== `dw_${wallet.id}`) {
      problems.push(`merchant and network ${key}: the provider's wallet ${keys[0]} is not the saved request ${wallet?.id}`)
    }
  }
  return {
    name: "one wallet per merchant and network",
    figures: `${wallets.merchants.length} merchants, ${wallets.requests} wallet requests; saved wallets ${tally([...saved.values()].map((w) => w.status))}; ` +
      `${provider.rows.length} at the provider`,
    problems
  }
}
