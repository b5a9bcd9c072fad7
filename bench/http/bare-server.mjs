/**
 * The bare baseline of bench/http: `node:http` + `pg`, nothing else. For
 * GET /api/v1/merchant/balance it does what the service's hot path must do at a minimum:
 * check the key's shape, hash it with SHA-256, run the service's balance query (Ledger.balance,
 * src/Ledger/Ledger.ts) with the key lookup joined in (one round trip), and answer with the same
 * bytes and content-type as the service.
 *
 * Environment: PORT, HOST (127.0.0.1), DATABASE_URL, POOL_MAX (20, as src/Db/Database.ts).
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
  pool.query(BALANCE_BY_KEY, [hash], (err, result) => {
    if (err) return send(res, 500, JSON.stringify({ error: { code: "MERCHANT_INTERNAL_ERROR", message: "Internal error." } }))
    const row = result.rows[0]
    if (row === undefined) return send(res, 401, unauthorized)
    if (row.status === "blocked") {
      return send(res, 403, JSON.stringify({ error: { code: "MERCHANT_BLOCKED", message: "This merchant account is blocked." } }))
    }
    send(res, 200, JSON.stringify({
      available: usd(row.available),
      on_hold: usd(row.onHold),
      total_deposited: usd(row.totalDeposited),
      total_spent: usd(row.totalSpent),
      currency: "USD",
      deposit_addresses: { trc20: row.trc20, bep20: row.bep20 }
    }))
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
