/**
 * The service's /buy transaction as plain `pg` calls (src/Purchases/Purchases.ts createById +
 * buyItem, Ledger.purchaseDebitSteps, Outbox.stepWithBalanceAfter and ChangeLog.reservationSteps,
 * in the same order, with the same parameters, as unnamed parameterised queries like
 * @effect/sql-pg sends them), sent as the service's fast lane sends them (src/Db/Pipeline.ts):
 * BEGIN, the idempotency record and the item's lock at once, then the buy statement with the
 * COMMIT: 2 round trips. Shared by the bare baselines: bare.mjs (a pg script) and bare-http.mjs
 * (the same behind a minimal node:http server).
 */
import { randomUUID } from "node:crypto"
import { pipelined } from "../../dist/src/Db/Pipeline.js"
import { PURCHASE_COLUMNS } from "../../dist/src/Purchases/Rows.js"

export const usd = (cents) => Number(cents) / 100

export const buy = async (pool, { merchantId, itemId, customId, tradeUrl, steamId, maxPriceCents }) => {
  const client = await pool.connect()
  try {
    const first = await pipelined(client, [
      ["BEGIN", []],
      [
        `INSERT INTO purchase_requests (merchant_id, custom_id, kind, item_id, target_trade_url, target_steam_id)
          VALUES ($1, $2, 'by_id', $3, $4, $5)
          ON CONFLICT (merchant_id, custom_id) DO NOTHING RETURNING custom_id`,
        [merchantId, customId, itemId, tradeUrl, steamId]
      ],
      [
        `SELECT status, price_cents AS "priceCents", provider_price_cents AS "providerPriceCents", item, sim
          FROM catalogue_items WHERE id = $1 FOR UPDATE`,
        [itemId]
      ]
    ])
    if (first._tag === "failed") throw first.error
    const [, inserted, locked] = first.results
    if (inserted.rows.length === 0) throw new Error("duplicate custom_id")
    const row = locked.rows[0]
    if (row === undefined) throw new Error("ITEM_NOT_FOUND")
    if (row.status !== "active") throw new Error("ITEM_UNAVAILABLE")
    const priceCents = Number(row.priceCents)
    if (priceCents > maxPriceCents) throw new Error("PRICE_CHANGED")
    const purchaseId = randomUUID()
    const item = JSON.parse(row.item)
    const eventId = randomUUID()
    const createdAt = new Date()
    const MARK = "\u0000balance_after\u0000"
    const data = Object.fromEntries(
      Object.entries({
        purchase_id: purchaseId,
        custom_id: customId,
        status: "created",
        market_hash_name: item.market_hash_name,
        price: usd(priceCents),
        target_steam_id: steamId,
        balance_after: MARK
      }).filter(([, v]) => v !== undefined && v !== null)
    )
    const body = JSON.stringify({ event_id: eventId, event_type: "purchase.created", created_at: createdAt.toISOString(), data })
    const mark = body.lastIndexOf(JSON.stringify(MARK))
    const second = await pipelined(client, [[
      `WITH debit AS (
          UPDATE balances SET available_cents = available_cents - $1, on_hold_cents = on_hold_cents + $2,
                 total_spent_cents = total_spent_cents + $3, updated_at = now()
          WHERE merchant_id = $4 AND available_cents >= $5 RETURNING available_cents),
        debit_entry AS (
          INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
          SELECT $6, 'purchase_debit', $7, available_cents, $8 FROM debit),
        inserted AS (
          INSERT INTO purchases (id, merchant_id, custom_id, attempt, item_id, market_hash_name, image_url, exterior, float,
            delivery_type, estimated_delivery_minutes, price_cents, provider_price_cents, sim, target_trade_url, target_steam_id,
            provider_request_id)
          SELECT $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25
          FROM debit
          RETURNING ${PURCHASE_COLUMNS}),
        event AS (
          INSERT INTO webhook_events (id, merchant_id, event_type, order_id, body, created_at)
          SELECT $26, $27, $28, $29, $30 || trim_scale(available_cents::numeric / 100)::text || $31, $32
          FROM "debit"),
        reserved AS (
          UPDATE catalogue_items SET status = 'reserved', updated_at = now()
          WHERE id = $33 AND status = 'active' AND EXISTS (SELECT 1 FROM debit) RETURNING id),
        queued AS (
          INSERT INTO catalogue_reservations (item_id) SELECT id FROM reserved),
        bought AS (
          SELECT inserted.*, debit.available_cents AS "balanceAfterCents", EXISTS (SELECT 1 FROM reserved) AS reserved
          FROM inserted, debit)
        SELECT bought.* FROM (SELECT 1) AS one LEFT JOIN bought ON true
        WHERE assert_true(bought.reserved, 'nothing bought')`,
      [
        priceCents,
        priceCents,
        priceCents,
        merchantId,
        priceCents,
        merchantId,
        -priceCents,
        purchaseId,
        purchaseId,
        merchantId,
        customId,
        1,
        itemId,
        item.market_hash_name,
        item.image_url,
        item.exterior,
        item.float,
        item.delivery_type,
        item.estimated_delivery_minutes,
        row.priceCents,
        row.providerPriceCents,
        row.sim,
        tradeUrl,
        steamId,
        randomUUID(),
        eventId,
        merchantId,
        "purchase.created",
        purchaseId,
        body.slice(0, mark),
        body.slice(mark + JSON.stringify(MARK).length),
        createdAt,
        itemId
      ]
    ], ["COMMIT", []]])
    // assert_true raised (PostgreSQL skipped the COMMIT) unless it bought
    if (second._tag === "failed") throw second.error
    const purchase = second.results[0].rows[0]
    const after = Number(purchase.balanceAfterCents)
    return { purchase, after }
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined)
    throw e
  } finally {
    client.release()
  }
}
