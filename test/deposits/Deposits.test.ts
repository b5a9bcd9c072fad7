/**
 * The crediting path and the ledger in process (Deposits, Ledger, Outbox on the test database):
 * a confirmed payment is credited once per tx_id with its tier's commission, its ledger row and its
 * balance.deposited event in the same transaction; repeats, conflicts and bad amounts change
 * nothing; a refund happens at most once. After every step the balance equals its ledger.
 */
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Deposits } from "../../src/Deposits/Deposits.js"
import { settle } from "../../src/Deposits/Fees.js"
import { toUnits } from "../../src/Domain/Money.js"
import { Ledger } from "../../src/Ledger/Ledger.js"
import { inProcess } from "../support/in-process.js"

const DepositsTest = inProcess(Layer.merge(Deposits.Default, Ledger.Default))

/** A merchant with an empty balance. */
const newMerchant = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient
  const id = crypto.randomUUID()
  yield* sql`INSERT INTO merchants (id, name, webhook_secret) VALUES (${id}, ${`m-${id}`}, 's')`
  yield* sql`INSERT INTO balances (merchant_id) VALUES (${id})`
  return id
})

/** The balance row beside the sum of its ledger and the count of its entries and events. */
const books = (merchantId: string) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const [row] = yield* sql<{ available: string; deposited: string; spent: string; ledger: string | null; entries: string; events: string }>`
      SELECT b.available_cents AS available, b.total_deposited_cents AS deposited, b.total_spent_cents AS spent,
        (SELECT sum(amount_cents) FROM ledger_entries WHERE merchant_id = b.merchant_id) AS ledger,
        (SELECT count(*) FROM ledger_entries WHERE merchant_id = b.merchant_id) AS entries,
        (SELECT count(*) FROM webhook_events WHERE merchant_id = b.merchant_id) AS events
      FROM balances b WHERE b.merchant_id = ${merchantId}`
    const available = Number(row!.available)
    // the balance is its ledger, and available + total_spent = total_deposited
    expect(Number(row!.ledger ?? 0)).toBe(available)
    expect(available + Number(row!.spent)).toBe(Number(row!.deposited))
    return { available, entries: Number(row!.entries), events: Number(row!.events) }
  })

/** A purchase's debit as the buy's statement writes it (Purchases/BuyStatements.ts): only if available covers it, with its ledger row. */
const purchaseDebit = (merchantId: string, cents: number, purchaseId: string) =>
  Effect.flatMap(PgClient.PgClient, (sql) =>
    sql`
      WITH debit AS (
        UPDATE balances SET available_cents = available_cents - ${cents}, on_hold_cents = on_hold_cents + ${cents},
               total_spent_cents = total_spent_cents + ${cents}, updated_at = now()
        WHERE merchant_id = ${merchantId} AND available_cents >= ${cents} RETURNING available_cents),
      debit_entry AS (
        INSERT INTO ledger_entries (merchant_id, kind, amount_cents, available_after_cents, reference_id)
        SELECT ${merchantId}, 'purchase_debit', ${-cents}, available_cents, ${purchaseId} FROM debit)
      SELECT 1`)

const creditedCents = (usdt: number) => Number(settle(toUnits(usdt, 6)!).creditedCents)

layer(DepositsTest, { timeout: 60_000, excludeTestServices: true })("deposits and the ledger", (it) => {
  it.effect("a payment is credited once per tx_id with its commission, one ledger row and one balance.deposited event", () =>
    Effect.gen(function*() {
      const deposits = yield* Deposits
      const sql = yield* PgClient.PgClient
      const merchantId = yield* newMerchant
      const txId = `tx-${crypto.randomUUID()}`
      const first = yield* deposits.credit({ merchantId, network: "tron", amount: 102.5, txId })
      const cents = creditedCents(102.5)
      expect(cents).toBeLessThan(10_250)
      expect(Math.round(first.amount * 100)).toBe(cents)
      expect(yield* books(merchantId)).toEqual({ available: cents, entries: 1, events: 1 })
      const [event] = yield* sql<{ body: string }>`SELECT body FROM webhook_events WHERE merchant_id = ${merchantId}`
      const body = JSON.parse(event!.body)
      expect(body.event_type).toBe("balance.deposited")
      expect(body.data).toMatchObject({ deposit_id: first.id, tx_id: txId, balance_after: cents / 100 })

      // the same payment confirmed again: the same deposit, nothing credited
      const again = yield* deposits.credit({ merchantId, network: "tron", amount: 102.5, txId })
      expect(again).toEqual(first)
      expect(yield* books(merchantId)).toEqual({ available: cents, entries: 1, events: 1 })
    }))

  it.effect("the same tx_id confirmed at once many times credits once", () =>
    Effect.gen(function*() {
      const deposits = yield* Deposits
      const merchantId = yield* newMerchant
      const txId = `tx-${crypto.randomUUID()}`
      const all = yield* Effect.all(
        Array.from({ length: 8 }, () => deposits.credit({ merchantId, network: "bsc", amount: 250, txId })),
        { concurrency: "unbounded" }
      )
      expect(new Set(all.map((d) => d.id)).size).toBe(1)
      expect(yield* books(merchantId)).toEqual({ available: creditedCents(250), entries: 1, events: 1 })
    }))

  it.effect("a tx_id seen with another amount, network or merchant is a conflict and changes nothing", () =>
    Effect.gen(function*() {
      const deposits = yield* Deposits
      const merchantId = yield* newMerchant
      const other = yield* newMerchant
      const txId = `tx-${crypto.randomUUID()}`
      yield* deposits.credit({ merchantId, network: "tron", amount: 100, txId })
      for (
        const request of [
          { merchantId, network: "tron" as const, amount: 100.5, txId },
          { merchantId, network: "bsc" as const, amount: 100, txId },
          { merchantId: other, network: "tron" as const, amount: 100, txId }
        ]
      ) {
        expect(yield* Effect.flip(deposits.credit(request))).toMatchObject({ _tag: "DepositTxIdConflict", txId })
      }
      expect(yield* books(merchantId)).toEqual({ available: creditedCents(100), entries: 1, events: 1 })
      expect(yield* books(other)).toEqual({ available: 0, entries: 0, events: 0 })
    }))

  it.effect("bad amounts and unknown merchants are refused before anything is written", () =>
    Effect.gen(function*() {
      const deposits = yield* Deposits
      const merchantId = yield* newMerchant
      for (const amount of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1.0000001, 1e12]) {
        const refused = yield* Effect.flip(deposits.credit({ merchantId, network: "tron", amount, txId: `tx-${crypto.randomUUID()}` }))
        expect(refused._tag).toBe("DepositAmountInvalid")
      }
      const unknown = crypto.randomUUID()
      expect(yield* Effect.flip(deposits.credit({ merchantId: unknown, network: "tron", amount: 50 }))).toMatchObject({
        _tag: "DepositMerchantNotFound",
        merchantId: unknown
      })
      expect(yield* books(merchantId)).toEqual({ available: 0, entries: 0, events: 0 })
    }))

  it.effect("a purchase's refund is credited at most once, and gives back its hold while in flight", () =>
    Effect.gen(function*() {
      const deposits = yield* Deposits
      const ledger = yield* Ledger
      const sql = yield* PgClient.PgClient
      const merchantId = yield* newMerchant
      yield* deposits.credit({ merchantId, network: "tron", amount: 100 })
      const funded = (yield* books(merchantId)).available
      const purchaseId = crypto.randomUUID()
      yield* purchaseDebit(merchantId, 1_234, purchaseId)
      expect(yield* books(merchantId)).toMatchObject({ available: funded - 1_234, entries: 2 })
      const onHold = () => sql<{ n: string }>`SELECT on_hold_cents AS n FROM balances WHERE merchant_id = ${merchantId}`
      expect(Number((yield* onHold())[0]!.n)).toBe(1_234)

      expect(yield* ledger.refundPurchase(merchantId, 1_234, purchaseId, true)).toEqual(Option.some(funded))
      expect(yield* ledger.refundPurchase(merchantId, 1_234, purchaseId, true)).toEqual(Option.none())
      expect(yield* books(merchantId)).toMatchObject({ available: funded, entries: 3 })
      expect(Number((yield* onHold())[0]!.n)).toBe(0)
      // the refund's entry records the balance it left
      const refundEntries = yield* sql<{ after: string }>`
        SELECT available_after_cents AS after FROM ledger_entries WHERE kind = 'purchase_refund' AND reference_id = ${purchaseId}`
      expect(refundEntries.map((row) => Number(row.after))).toEqual([funded])

      // a debit larger than what is available changes nothing
      const tooDear = crypto.randomUUID()
      yield* purchaseDebit(merchantId, funded + 1, tooDear)
      expect(yield* books(merchantId)).toMatchObject({ available: funded, entries: 3 })
    }))
})
