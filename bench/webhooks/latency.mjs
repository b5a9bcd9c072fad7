/**
 * bench/webhooks, part 2: the end-to-end latency with an idle queue: one /buy at a time by the first
 * merchant; each purchase event's arrival at the receiver minus its created_at (stamped before the
 * transaction commits: an upper bound), by event type and over all.
 */
import { randomUUID } from "node:crypto"
import { admin, log, percentileSorted, sleep } from "../lib/harness.mjs"

export const endToEnd = async (opts, { service, receiver, waitArrivals, merchants }) => {
  const buyer = merchants[0]
  log("\n2. latency from a purchase's state change to its webhook, idle queue")
  await admin(service, "/admin/deposits", { merchant_id: buyer.id, network: "tron", amount: 100_000, tx_id: `fund-${randomUUID()}` })
  const items = Array.from({ length: opts.buys }, (_, i) => ({
    market_hash_name: `Bench Hook Item ${i}`,
    price: 1,
    delivery_type: "instant",
    is_stat_trak: false,
    is_souvenir: false,
    stickers: []
  }))
  const loaded = await admin(service, "/admin/catalogue/items", { items }, "PUT")
  await sleep(2000)
  await receiver({ op: "reset", latencies: true })
  for (const itemId of loaded.ids) {
    const res = await fetch(`${service.baseUrl}/api/v1/merchant/buy`, {
      method: "POST",
      headers: { authorization: `Bearer ${buyer.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        item_id: itemId,
        max_price: 5,
        custom_id: `bench-${randomUUID()}`,
        target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
      })
    })
    if (res.status !== 201) throw new Error(`buy: ${res.status} ${await res.text()}`)
    await sleep(50)
  }
  // every purchase's four events (created, processing, sent_to_steam, completed)
  await waitArrivals(opts.buys * 4, 120_000)
  const { latencies } = await receiver({ op: "status", latencies: true })
  const byType = {}
  for (const { type, ms } of latencies) (byType[type] ??= []).push(ms)
  const latency = Object.fromEntries(
    Object.entries(byType).map(([type, xs]) => {
      const sorted = [...xs].sort((a, b) => a - b)
      return [type, { n: xs.length, p50: percentileSorted(sorted, 50), p99: percentileSorted(sorted, 99), max: sorted[sorted.length - 1] }]
    })
  )
  for (const [type, l] of Object.entries(latency)) log(`  ${type}: n ${l.n}, p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms`)
  const allSorted = latencies.map((l) => l.ms).sort((a, b) => a - b)
  const all = { n: allSorted.length, p50: percentileSorted(allSorted, 50), p99: percentileSorted(allSorted, 99) }
  log(`  all purchase events: p50 ${all.p50} ms, p99 ${all.p99} ms`)
  return { byType: latency, all }
}
