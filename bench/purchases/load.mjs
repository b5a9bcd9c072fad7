/**
 * bench/purchases' load on the service (or on the bare behind HTTP): `concurrency` clients, each on
 * a keep-alive connection of its own (bench/lib/http-connection.mjs) sending its next POST /buy as
 * soon as the last one answered, each buy a distinct custom_id and item; a warm-up, then a
 * measured window whose start and end are signalled (`onMeasuring`, `onWindowEnd`).
 */
import { sleep } from "../lib/harness.mjs"
import { openConnection } from "../lib/http-connection.mjs"

export const TRADE_URL = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
const BUY_PATH = "/api/v1/merchant/buy"

export const loadService = async (service, merchants, items, { concurrency, warmup, duration, prefix, onMeasuring, onWindowEnd }) => {
  const url = new URL(service.baseUrl)
  const connections = await Promise.all(Array.from({ length: concurrency }, () => openConnection(url.hostname, Number(url.port))))
  let measuring = false
  let stop = false
  const latencies = []
  let count = 0
  let errors = 0
  const errorKinds = {}
  let seq = 0
  const worker = async (w) => {
    const merchant = merchants[w % merchants.length]
    const headers = { authorization: `Bearer ${merchant.api_key}`, "content-type": "application/json" }
    while (!stop) {
      if (items.next >= items.ids.length) throw new Error(`service: out of items after ${items.next}`)
      const itemId = items.ids[items.next++]
      const body = JSON.stringify({ item_id: itemId, max_price: 100000000, custom_id: `${prefix}-${seq++}`, target_trade_url: TRADE_URL })
      const t0 = performance.now()
      let ok = false
      let kind
      try {
        const res = await connections[w].request("POST", BUY_PATH, headers, body)
        ok = res.status === 201
        if (!ok) kind = `${res.status} ${res.body.slice(0, 120)}`
      } catch (e) {
        kind = e.message
      }
      if (measuring && !stop) {
        if (ok) {
          latencies.push(performance.now() - t0)
          count++
        } else {
          errors++
          errorKinds[kind] = (errorKinds[kind] ?? 0) + 1
        }
      }
    }
  }
  const workers = Array.from({ length: concurrency }, (_, w) => worker(w))
  await sleep(warmup * 1000)
  measuring = true
  onMeasuring()
  const t0 = performance.now()
  await sleep(duration * 1000)
  const seconds = (performance.now() - t0) / 1000
  stop = true
  measuring = false
  onWindowEnd()
  await Promise.all(workers)
  connections.forEach((connection) => connection.close())
  return { count, errors, errorKinds, seconds, latencies }
}
