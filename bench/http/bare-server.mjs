/**
 * The bare baseline of bench/http: `node:http` + `pg`, nothing else. For
 * GET /api/v1/merchant/balance it does what the service's hot path must do at a minimum:
 * check the key's shape, hash it with SHA-256, find the merchant, run the service's balance query
 * (BALANCE_SQL of src/Ledger/Ledger.ts) and answer with the same bytes and content-type.
 *
 * Finding the merchant, by KEY_LOOKUP:
 * - `cache` (default): like the service, a key hash seen once is kept in a Map (the service keeps
 *   it 2 s and drops it on any change), so a request runs exactly the service's one statement;
 * - `joined`: the api_keys lookup joined into the balance query on every request (one round trip,
 *   a heavier statement than the service's).
 *
 * Environment: PORT, HOST (127.0.0.1), DATABASE_URL, POOL_MAX (20, as src/Db/Database.ts), KEY_LOOKUP.
 * Prints "listening <port>" on stdout once it accepts connections.
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const port = Number(process.env.PORT ?? 0)
const host = process.env.HOST ?? "127.0.0.1"
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.POOL_MAX ?? 20),
  idleTimeoutMillis: 30_000,
  application_name: "bench-bare-baseline"
})
pool.on("error", () => {})

const API_KEY_PATTERN = /^mer_live_[A-Za-z0-9_-]{32}$/

// Ledger.balance's SELECT, with the api_keys lookup of Merchants.authenticate joined in.
const BALANCE_BY_KEY = `
  SELECT b.available_cents AS available, b.on_hold_cents AS "onHold",
         b.total_deposited_cents AS "totalDeposited", b.total_spent_cents AS "totalSpent",
         m.legacy_trc20 AS trc20, m.legacy_bep20 AS bep20, m.status
  FROM api_keys k
  JOIN merchants m ON m.id = k.merchant_id
  JOIN balances b ON b.merchant_id = m.id
  WHERE k.key_hash = $1 AND k.revoked_at IS NULL`

// The service's statement (src/Ledger/Ledger.ts BALANCE_SQL), with the merchant's status for the 403.
const BALANCE_BY_MERCHANT = `
  SELECT b.available_cents AS available, b.on_hold_cents AS "onHold",
         b.total_deposited_cents AS "totalDeposited", b.total_spent_cents AS "totalSpent",
         m.legacy_trc20 AS trc20, m.legacy_bep20 AS bep20
  FROM balances b JOIN merchants m ON m.id = b.merchant_id
  WHERE b.merchant_id = $1`

const KEY_BY_HASH = `
  SELECT m.id, m.status FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
  WHERE k.key_hash = $1 AND k.revoked_at IS NULL`

const keyLookup = process.env.KEY_LOOKUP ?? "cache"
const merchantsByHash = new Map()

const usd = (cents) => Number(cents) / 100

const send = (res, status, body) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const unauthorized = JSON.stringify({
  error: { code: "MERCHANT_API_KEY_MISSING", message: "A valid API key is required: send Authorization: Bearer <API_KEY>." }
})

const server = createServer((req, res) => {
  if (req.method !== "GET" || req.url.split("?")[0] !== "/api/v1/merchant/balance") {
    return send(res, 404, JSON.stringify({ error: { code: "MERCHANT_NOT_FOUND", message: "not found" } }))
  }
  const authorization = req.headers.authorization
  const key = authorization !== undefined && authorization.startsWith("Bearer ") ? authorization.slice(7).trim() : ""
  if (!API_KEY_PATTERN.test(key)) return send(res, 401, unauthorized)
  const hash = createHash("sha256").update(key).digest("hex")
  const answer = (err, result) => {
    if (err) return send(res, 500, JSON.stringify({ error: { code: "MERCHANT_INTERNAL_ERROR", message: "Internal error." } }))
    const row = result.rows[0]
    if (row === undefined) return send(res, 401, unauthorized)
    send(
      res,
      200,
      JSON.stringify({
        available: usd(row.available),
        on_hold: usd(row.onHold),
        total_deposited: usd(row.totalDeposited),
        total_spent: usd(row.totalSpent),
        currency: "USD",
        deposit_addresses: { trc20: row.trc20, bep20: row.bep20 }
      })
    )
  }
  const forMerchant = (merchant) => {
    if (merchant.status === "blocked") {
      return send(res, 403, JSON.stringify({ error: { code: "MERCHANT_BLOCKED", message: "This merchant account is blocked." } }))
    }
    pool.query(BALANCE_BY_MERCHANT, [merchant.id], answer)
  }
  if (keyLookup === "joined") {
    return pool.query(BALANCE_BY_KEY, [hash], (err, result) => {
      if (!err && result.rows[0]?.status === "blocked") return forMerchant(result.rows[0])
      answer(err, result)
    })
  }
  const cached = merchantsByHash.get(hash)
  if (cached !== undefined) return forMerchant(cached)
  pool.query(KEY_BY_HASH, [hash], (err, result) => {
    if (err) return answer(err)
    const merchant = result.rows[0]
    if (merchant === undefined) return send(res, 401, unauthorized)
    merchantsByHash.set(hash, merchant)
    forMerchant(merchant)
  })
})

server.listen(port, host, () => {
  process.stdout.write(`listening ${server.address().port}\n`)
})

const stop = () => {
  setTimeout(() => process.exit(0), 2000).unref() // never outlive a stop because of the pool
  server.close()
  server.closeAllConnections?.()
  pool.end().finally(() => process.exit(0))
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
