/**
 * Buying by id in process (the buy engine on the test database, no HTTP): a buy debits the item's
 * price once, writes its ledger row and its `purchase.created` event, and reserves the item; a
 * repeat of its custom_id answers the same purchase without a second debit; refusals (price above
 * max_price, a balance too small, an item taken or unknown) change nothing. Buys that arrive while
 * others wait are bought together, in few transactions, with the same answers. After every step
 * the balance equals its ledger.
 */
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schedule } from "effect"
import { ChangeLog } from "../../src/Catalogue/ChangeLog.js"
import { BuyEngine } from "../../src/Purchases/BuyEngine.js"
import { PurchaseNotifications } from "../../src/Purchases/Notifications.js"
import { Purchases } from "../../src/Purchases/Purchases.js"
import { inProcess, liveItem, RECIPIENT } from "../support/in-process.js"

const PurchasesTest = inProcess(Layer.mergeAll(BuyEngine.Default, Purchases.Default, PurchaseNotifications.Default, ChangeLog.Default))

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
      const purchases = yield* BuyEngine
      const sql = yield* PgClient.PgClient
      const merchantId = yield* fundedMerchant(10_000)
      const itemId = yield* liveItem(12.34)
      const request = { merchantId, itemId, maxPrice: 12.34, customId: "order-1", recipient: RECIPIENT }
      const first = yield* purchases.buy(request)
      expect(first._tag).toBe("created")
      expect(first.balanceCents).toBe(10_000 - 1_234)
      expect(yield* books(merchantId)).toEqual({ available: 8_766, onHold: 1_234, purchases: 1, events: 1 })
      const [event] = yield* sql<{ eventType: string }>`SELECT event_type AS "eventType" FROM webhook_events WHERE merchant_id = ${merchantId}`
      expect(event!.eventType).toBe("purchase.created")
      const [item] = yield* sql<{ status: string }>`SELECT status FROM catalogue_items WHERE id = ${itemId}`
      expect(item!.status).not.toBe("live")

      const again = yield* purchases.buy(request)
      expect(again._tag).toBe("existing")
      expect(again.purchase.id).toBe(first.purchase.id)
      expect(yield* books(merchantId)).toEqual({ available: 8_766, onHold: 1_234, purchases: 1, events: 1 })

      // the same custom_id for another item is not a second purchase
      const other = yield* liveItem(1)
      const conflict = yield* Effect.flip(purchases.buy({ ...request, itemId: other }))
      expect(conflict._tag).toBe("DuplicateCustomId")
      expect(yield* books(merchantId)).toEqual({ available: 8_766, onHold: 1_234, purchases: 1, events: 1 })
    }))

  it.effect("refuses a price above max_price, a balance too small, a taken and an unknown item, changing nothing", () =>
    Effect.gen(function*() {
      const purchases = yield* BuyEngine
      const merchantId = yield* fundedMerchant(1_000)
      const dear = yield* liveItem(25)
      const cheap = yield* liveItem(5)
      const refusal = (itemId: string, maxPrice: number) =>
        Effect.flip(purchases.buy({ merchantId, itemId, maxPrice, customId: crypto.randomUUID(), recipient: RECIPIENT })).pipe(
          Effect.map((error) => error._tag)
        )
      expect(yield* refusal(cheap, 4.99)).toBe("PriceChanged")
      expect(yield* refusal(dear, 25)).toBe("InsufficientBalance")
      expect(yield* refusal(crypto.randomUUID(), 5)).toBe("ItemNotFound")
      expect(yield* books(merchantId)).toEqual({ available: 1_000, onHold: 0, purchases: 0, events: 0 })
      // a second merchant's buy of an item already bought
      yield* purchases.buy({ merchantId, itemId: cheap, maxPrice: 5, customId: "mine", recipient: RECIPIENT })
      const other = yield* fundedMerchant(1_000)
      const taken = yield* Effect.flip(purchases.buy({ merchantId: other, itemId: cheap, maxPrice: 5, customId: "theirs", recipient: RECIPIENT }))
      expect(taken._tag).toBe("ItemUnavailable")
      expect(yield* books(other)).toEqual({ available: 1_000, onHold: 0, purchases: 0, events: 0 })
      expect(yield* books(merchantId)).toEqual({ available: 500, onHold: 500, purchases: 1, events: 1 })
    }))

  it.effect("concurrent buys with one custom_id make one purchase and one debit", () =>
    Effect.gen(function*() {
      const purchases = yield* BuyEngine
      const merchantId = yield* fundedMerchant(5_000)
      const itemId = yield* liveItem(10)
      const outcomes = yield* Effect.all(
        Array.from({ length: 6 }, () => Effect.either(purchases.buy({ merchantId, itemId, maxPrice: 10, customId: "same", recipient: RECIPIENT }))),
        { concurrency: "unbounded" }
      )
      const ids = new Set(outcomes.flatMap((o) => o._tag === "Right" ? [o.right.purchase.id] : []))
      expect(ids.size).toBe(1)
      // a repeat that met the first still in progress is told to retry, never a second purchase
      for (const o of outcomes) if (o._tag === "Left") expect(o.left._tag).toBe("Conflict")
      expect(yield* books(merchantId)).toEqual({ available: 4_000, onHold: 1_000, purchases: 1, events: 1 })
    }))

  it.effect("buys that arrive while others wait are bought together: few transactions, each buy answered as alone", () =>
    Effect.gen(function*() {
      const engine = yield* BuyEngine
      const sql = yield* PgClient.PgClient
      const merchantId = yield* fundedMerchant(100_000)
      const items = yield* Effect.forEach(Array.from({ length: 10 }, (_, i) => i), () => liveItem(10))
      const dear = yield* liveItem(50)
      const buy = (itemId: string, customId: string, maxPrice = 10) =>
        Effect.either(engine.buy({ merchantId, itemId, maxPrice, customId, recipient: RECIPIENT }))
      // the merchant's balance row held (on PGlite, the one session) until every buy is queued
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT 1 FROM balances WHERE merchant_id = ${merchantId} FOR UPDATE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      })))
      yield* Deferred.await(locked)
      const buying = yield* Effect.fork(Effect.all([
        ...items.map((itemId, i) => buy(itemId, `batch-${i}`)),
        buy(dear, "too-dear", 49.99),
        buy(items[0]!, "batch-0")
      ], { concurrency: "unbounded" }))
      yield* Effect.repeat(engine.pending, { until: (n) => n === 12, schedule: Schedule.spaced("10 millis") })
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      const outcomes = yield* Fiber.join(buying)

      const bought = outcomes.slice(0, 10).flatMap((o) => o._tag === "Right" ? [o.right] : [])
      expect(bought.length).toBe(10)
      const refused = outcomes[10]!
      expect(refused._tag === "Left" && refused.left._tag).toBe("PriceChanged")
      // the repeat of batch-0 answers its purchase (whichever of the two ran first created it)
      const repeat = outcomes[11]!
      expect(repeat._tag).toBe("Right")
      const first = bought[0]!
      if (repeat._tag === "Right") {
        expect(repeat.right.purchase.id).toBe(first.purchase.id)
        expect([repeat.right._tag, first._tag].sort()).toEqual(["created", "existing"])
      }
      expect(yield* books(merchantId)).toEqual({ available: 90_000, onHold: 10_000, purchases: 10, events: 10 })
      // now() is a transaction's start: two batches were under way when the rest were queued, and the rest is one batch
      const [{ transactions }] = yield* sql<{ transactions: string }>`
        SELECT count(DISTINCT created_at) AS transactions FROM purchases WHERE merchant_id = ${merchantId}`
      expect(Number(transactions)).toBeLessThanOrEqual(3)
      // the refused buy left nothing behind: its custom_id buys when the price allows
      const again = yield* buy(dear, "too-dear", 50)
      expect(again._tag === "Right" && again.right._tag).toBe("created")
    }))
})
