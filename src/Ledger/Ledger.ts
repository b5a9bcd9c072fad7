/**
 * The ledger: every change of a merchant's balance is a ledger row written in the same transaction
 * as the balance row's update (the statements: Repo.ts). Each method must run inside the caller's
 * transaction, beside the state change it pays for. The UNIQUE (kind, reference_id) of the ledger
 * makes every credit, debit and refund happen at most once, whatever retries or crashes happen.
 * Each change is announced to the BalanceCache first (inside that transaction). A purchase's debit
 * is written by the buy's own statement (Purchases/BuyStatements.ts), which announces it too.
 */
import { Effect, Option, Schema } from "effect"
import { BalanceCache } from "./BalanceCache.js"
import { BalanceRow, LedgerRepo } from "./Repo.js"

// the fast lane's balance read (Merchants/Http.ts) takes them from here
export { BALANCE_SQL, BalanceRow } from "./Repo.js"

const isBalanceRow = Schema.is(BalanceRow)

export class Ledger extends Effect.Service<Ledger>()("Ledger", {
  effect: Effect.gen(function*() {
    const repo = yield* LedgerRepo
    const cache = yield* BalanceCache

    /** Balance in cents, with the retained legacy deposit addresses (kept in memory on PGlite: BalanceCache.ts). */
    const balance = (merchantId: string) => cache.read(merchantId, repo.findBalance(merchantId))
    /** The balance kept in memory (PGlite only), without a query: undefined when none is kept. */
    const keptBalance = (merchantId: string) => cache.peek(merchantId, isBalanceRow)

    /** Available after a change, or a defect when the merchant has no balance row. */
    const availableAfter = (merchantId: string) => (after: Option.Option<{ readonly available: number }>) =>
      Option.match(after, {
        onNone: () => Effect.die(new Error(`no balance row for ${merchantId}`)),
        onSome: ({ available }) => Effect.succeed(available)
      })

    /**
     * Credits a confirmed deposit: available and total_deposited grow, and the ledger row is
     * written by the same statement. Returns available after.
     */
    const creditDeposit = (merchantId: string, cents: number, depositId: string) =>
      Effect.gen(function*() {
        yield* cache.changed(merchantId)
        const after = yield* repo.creditDeposit({ merchantId, cents, referenceId: depositId }).pipe(Effect.catchTag("ParseError", Effect.die))
        return yield* availableAfter(merchantId)(after)
      })

    /** Delivery: the purchase leaves on_hold without crediting available. */
    const settlePurchase = (merchantId: string, cents: number) =>
      Effect.zipRight(cache.changed(merchantId), repo.settlePurchase({ merchantId, cents })).pipe(Effect.catchTag("ParseError", Effect.die))

    /**
     * Refunds a purchase in full, once: available grows, total_spent shrinks, and on_hold shrinks
     * if the purchase was still in flight. None if it was already refunded (nothing is changed).
     */
    const refundPurchase = (merchantId: string, cents: number, purchaseId: string, wasInFlight: boolean) =>
      Effect.gen(function*() {
        yield* cache.changed(merchantId)
        const inserted = yield* repo.insertRefund({ merchantId, cents, referenceId: purchaseId })
        if (!inserted) return Option.none<number>()
        const holdRelease = wasInFlight ? cents : 0
        const after = yield* availableAfter(merchantId)(yield* repo.creditRefund({ merchantId, cents, holdRelease }))
        yield* repo.setRefundAfter({ purchaseId, available: after })
        return Option.some(after)
      }).pipe(Effect.catchTag("ParseError", Effect.die))

    return { balance, keptBalance, creditDeposit, settlePurchase, refundPurchase } as const
  }),
  dependencies: [LedgerRepo.Default, BalanceCache.Default]
}) {}
