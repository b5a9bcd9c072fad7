/**
 * The service's /buy transaction as plain `pg` calls, built from the service's own statements
 * (src/Purchases/BuyStatements.ts, compiled here as the pipelined driver compiles them: no copy of
 * the SQL) and sent as its PostgreSQL driver sends them (src/Db/Pipeline.ts): BEGIN, the
 * idempotency record and the item's lock at once, then the buy statement with the COMMIT: 2 round
 * trips. What the bare leaves out is the service's own: HTTP, authentication, the buy engine's
 * queue and batching, the work after the commit. Shared by the bare baselines: bare.mjs (a pg
 * script) and bare-http.mjs (the same behind a minimal node:http server).
 *
 * `statementsReady()` builds the statements once per process, on a SqlClient of its own on
 * DATABASE_URL (it compiles statements; the buys run on the caller's pool).
 */
import { PgClient } from "@effect/sql-pg"
import { Layer, ManagedRuntime, Redacted } from "effect"
import { Settings } from "../../dist/src/Config.js"
import { pipelined } from "../../dist/src/Db/Pipeline.js"
import { BuyStatements, decodeLockedItems, itemRefusal } from "../../dist/src/Purchases/BuyStatements.js"

export const usd = (cents) => Number(cents) / 100

let statements

/** The service's buy statements, built once (call before the first buy). */
export const statementsReady = async () => {
  if (statements !== undefined) return
  const layer = BuyStatements.Default.pipe(
    Layer.provide(Settings.Default),
    Layer.provide(PgClient.layer({ url: Redacted.make(process.env.DATABASE_URL), maxConnections: 1 }))
  )
  statements = await ManagedRuntime.make(layer).runPromise(BuyStatements)
}

export const buy = async (pool, { merchantId, itemId, customId, tradeUrl, steamId, maxPriceCents }) => {
  const input = { merchantId, itemId, customId, maxPrice: maxPriceCents / 100, recipient: { tradeUrl, steamId } }
  const client = await pool.connect()
  try {
    const first = await pipelined(client, [
      ["BEGIN", []],
      statements.insertRequest(input).compile(),
      statements.lockItems([itemId]).compile()
    ])
    if (first._tag === "failed") throw first.error
    const [, inserted, locked] = first.results
    if (inserted.rows.length === 0) throw new Error("duplicate custom_id")
    const rows = decodeLockedItems(locked.rows)
    if (rows._tag === "Left") throw new Error("undecodable item row")
    const row = rows.right[0]
    const refusal = itemRefusal(row, input)
    if (refusal !== undefined) throw new Error(refusal._tag)
    // undoRequestUnlessBought: assert_true raises (PostgreSQL skips the COMMIT) unless it bought
    const second = await pipelined(client, [statements.buyStatement({ ...input, attempt: 1 }, row, true).compile(), ["COMMIT", []]])
    if (second._tag === "failed") throw second.error
    const purchase = second.results[0].rows[0]
    if (purchase === undefined) throw new Error("InsufficientBalance")
    return { purchase, after: Number(purchase.balanceAfterCents) }
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined)
    throw e
  } finally {
    client.release()
  }
}
