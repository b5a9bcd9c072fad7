/**
 * bench/purchases bare baseline behind HTTP: the bare's /buy transaction (bare-buy.mjs) served by a
 * minimal `node:http` server, on its own copy of the data. What any HTTP front adds to the bare pg
 * script (a second process on the request's way, its socket reads and writes, the JSON in and
 * out) with nothing of the service's own: no framework, no validation beyond reading the fields,
 * no purchase worker, no catalogue. The service is loaded and measured the same way (run.mjs), so
 * service / bare-http is what the service's code costs over an HTTP hop, and bare-http / bare what
 * the hop itself costs.
 *
 * Forked by run.mjs (DATABASE_URL in the environment), driven over IPC:
 *   init {keys: {apiKey: merchantId}, steamId}   -> {port}   (listens on 127.0.0.1, any free port)
 *   pool {max}                                   -> {max}    (a new pool of `max` warm connections; 0: none)
 * POST /api/v1/merchant/buy with `Authorization: Bearer <key>` and the service's body answers 201
 * with a PurchaseCreated-shaped body, or 409 `{"error": ...}` when the transaction refused.
 */
import http from "node:http"
import pg from "pg"
import { buy, statementsReady, usd } from "./bare-buy.mjs"

let keys = new Map()
let steamId = ""
let pool

const openPool = async (max) => {
  if (pool !== undefined) await pool.end()
  pool = undefined
  if (max === 0) return
  pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max })
  pool.on("error", () => undefined)
  const opened = []
  for (let i = 0; i < max; i++) opened.push(await pool.connect())
  opened.forEach((client) => client.release())
}

const answer = (response, status, body) => {
  const bytes = Buffer.from(JSON.stringify(body))
  response.writeHead(status, { "content-type": "application/json", "content-length": bytes.length })
  response.end(bytes)
}

const server = http.createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", async () => {
    try {
      const merchantId = keys.get(request.headers.authorization?.slice(7))
      if (merchantId === undefined) return answer(response, 401, { error: { code: "MERCHANT_API_KEY_MISSING", message: "unknown key" } })
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      const { purchase, after } = await buy(pool, {
        merchantId,
        itemId: body.item_id,
        customId: body.custom_id,
        tradeUrl: body.target_trade_url,
        steamId,
        maxPriceCents: Math.round(body.max_price * 100)
      })
      answer(response, 201, {
        purchase_id: purchase.id,
        custom_id: purchase.customId,
        status: purchase.status,
        item: {
          market_hash_name: purchase.marketHashName,
          price: usd(purchase.priceCents),
          delivery_type: purchase.deliveryType,
          estimated_delivery_minutes: purchase.estimatedDeliveryMinutes
        },
        balance_after: usd(after),
        created_at: new Date(purchase.createdAt).toISOString()
      })
    } catch (e) {
      answer(response, 409, { error: { code: "BARE_REFUSED", message: String(e?.message ?? e) } })
    }
  })
})

process.on("message", async (msg) => {
  try {
    if (msg.cmd === "init") {
      keys = new Map(Object.entries(msg.keys))
      steamId = msg.steamId
      await statementsReady()
      await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
      process.send({ replyTo: msg.id, port: server.address().port })
    } else if (msg.cmd === "pool") {
      await openPool(msg.max)
      process.send({ replyTo: msg.id, max: msg.max })
    }
  } catch (e) {
    process.send({ replyTo: msg.id, error: String(e?.stack ?? e) })
  }
})
process.send({ ready: true })
