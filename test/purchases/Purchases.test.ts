/**
 * Buying by id in process (Purchases on the test database, no HTTP): a buy debits the item's
 * price once, writes its ledger row and its `purchase.created` event, and reserves the item; a
 * repeat of its custom_id answers the same purchase without a second debit; refusals (price above
 * max_price, a balance too small, an item taken or unknown) change nothing. After every step the
 * balance equals its ledger.
 */
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { ChangeLog } from "../../src/Catalogue/ChangeLog.js"
import { DirectTransactions } from "../../src/Db/Database.js"
import { Fibers } from "../../src/Ops/Fibers.js"
import { PurchaseNotifications } from "../../src/Purchases/Notifications.js"
import { Purchases } from "../../src/Purchases/Purchases.js"
import { DatabaseTest } from "../support/database-layer.js"
import { liveItem, RECIPIENT, SettingsTest } from "../support/in-process.js"

const PurchasesTest = Purchases.Default.pipe(
  Layer.provideMerge(Layer.mergeAll(PurchaseNotifications.Default, ChangeLog.Default)),
  Layer.provideMerge(Layer.mergeAll(SettingsTest, Fibers.Default, Layer.succeed(DirectTransactions, Option.none()))),
  Layer.provideMerge(DatabaseTest)
)

/** A merchant with `cents` available, credited through a ledger row as a deposit is. */
const fundedMerchant = (cents: number) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const id = crypto.randomUUID()
    yield* sql`INSERT INTO merchants (id, name, webhook_secret) VALUES (${id}, ${`buyer-${id}`}, 's')`
    yield* sql`INSERT INTO balances (merchant_id, available_cents, total_deposited_cents) VALUES (${id}, ${cents}, ${cents})`
    yield* sql`INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
               VALUES (${id}, 'deposit_credit', ${cents}, ${cents}, ${crypto.randomUUID()})`
    return id
  })

/** The balance beside its ledger, and the merchant's purchases and events. */
const books = (merchantId: string) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const [row] = yield* sql<{ available: string; onHold: string; ledger: string; purchases: string; events: string }>`
      SELECT b.available_cents AS available, b.on_hold_cents AS "onHold",
        (SELECT sum(amount_cents) FROM ledger_entries WHERE merchant_id = b.merchant_id) AS ledger,
        (SELECT count(*) FROM purchases WHERE merchant_id = b.merchant_id) AS purchases,
        (SELECT count(*) FROM webhook_events WHERE merchant_id = b.merchant_id) AS events
      FROM balances b WHERE b.merchant_id = ${merchantId}`
    expect(Number(row!.ledger)).toBe(Number(row!.available))
    return { available: Number(row!.available), onHold: Number(row!.onHold), purchases: Number(row!.purchases), events: Number(row!.events) }
  })

layer(PurchasesTest, { timeout: 60_000, excludeTestServices: true })("buying by id", (it) => {
  it.effect("debits once, records the ledger row and purchase.created, reserves the item; a repeat answers the same purchase", () =>
    Effect.gen(function*() {
      const purchases = yield* Purchases
      const sql = yield* PgClient.PgClient
      const merchantId = yield* fundedMerchant(10_000)
      const itemId = yield* liveItem(12.34)
      const request = { merchantId, itemId, maxPrice: 12.34, customId: "order-1", recipient: RECIPIENT }
      const first = yield* purchases.createById(request)
      expect(first._tag).toBe("created")
      expect(first.balanceCents).toBe(10_000 - 1_234)
      expect(yield* books(merchantId)).toEqual({ available: 8_766, onHold: 1_234, purchases: 1, events: 1 })
      const [event] = yield* sql<{ eventType: string }>`SELECT event_type AS "eventType" FROM webhook_events WHERE merchant_id = ${merchantId}`
      expect(event!.eventType).toBe("purchase.created")
      const [item] = yield* sql<{ status: string }>`SELECT status FROM catalogue_items WHERE id = ${itemId}`
      expect(item!.status).not.toBe("live")

      const again = yield* purchases.createById(request)
      expect(again._tag).toBe("existing")
      expect(again.purchase.id).toBe(first.purchase.id)
      expect(yield* books(merchantId)).toEqual({ available: 8_766, onHold: 1_234, purchases: 1, events: 1 })

      // the same custom_id for another item is not a second purchase
      const other = yield* liveItem(1)
      const conflict = yield* Effect.flip(purchases.createById({ ...request, itemId: other }))
      expect(conflict._tag).toBe("DuplicateCustomId")
      expect(yield* books(merchantId)).toEqual({ available: 8_766, onHold: 1_234, purchases: 1, events: 1 })
    }))

  it.effect("refuses a price above max_price, a balance too small, a taken and an unknown item, changing nothing", () =>
    Effect.gen(function*() {
      const purchases = yield* Purchases
      const merchantId = yield* fundedMerchant(1_000)
      const dear = yield* liveItem(25)
      const cheap = yield* liveItem(5)
      const refusal = (itemId: string, maxPrice: number) =>
        Effect.flip(purchases.createById({ merchantId, itemId, maxPrice, customId: crypto.randomUUID(), recipient: RECIPIENT })).pipe(
          Effect.map((error) => error._tag)
        )
      expect(yield* refusal(cheap, 4.99)).toBe("PriceChanged")
      expect(yield* refusal(dear, 25)).toBe("InsufficientBalance")
      expect(yield* refusal(crypto.randomUUID(), 5)).toBe("ItemNotFound")
      expect(yield* books(merchantId)).toEqual({ available: 1_000, onHold: 0, purchases: 0, events: 0 })
      // a second merchant's buy of an item already bought
      yield* purchases.createById({ merchantId, itemId: cheap, maxPrice: 5, customId: "mine", recipient: RECIPIENT })
      const other = yield* fundedMerchant(1_000)
      const taken = yield* Effect.flip(purchases.createById({ merchantId: other, itemId: cheap, maxPrice: 5, customId: "theirs", recipient: RECIPIENT }))
      expect(taken._tag).toBe("ItemUnavailable")
      expect(yield* books(other)).toEqual({ available: 1_000, onHold: 0, purchases: 0, events: 0 })
      expect(yield* books(merchantId)).toEqual({ available: 500, onHold: 500, purchases: 1, events: 1 })
    }))

  it.effect("concurrent buys with one custom_id make one purchase and one debit", () =>
    Effect.gen(function*() {
      const purchases = yield* Purchases
      const merchantId = yield* fundedMerchant(5_000)
      const itemId = yield* liveItem(10)
      const outcomes = yield* Effect.all(
        Array.from({ length: 6 }, () => Effect.either(purchases.createById({ merchantId, itemId, maxPrice: 10, customId: "same", recipient: RECIPIENT }))),
        { concurrency: "unbounded" }
      )
      const ids = new Set(outcomes.flatMap((o) => o._tag === "Right" ? [o.right.purchase.id] : []))
      expect(ids.size).toBe(1)
      // a repeat that met the first still in progress is told to retry, never a second purchase
      for (const o of outcomes) if (o._tag === "Left") expect(o.left._tag).toBe("Conflict")
      expect(yield* books(merchantId)).toEqual({ available: 4_000, onHold: 1_000, purchases: 1, events: 1 })
    }))
})
