/**
 * Deposit wallets (spec 2.3, 3.2, 4.1): the merchant's list from saved state, a request for a
 * network, and reconciliation with the provider. The rule: a lost or ambiguous provider answer never
 * leads to a second provider wallet (one durable request per merchant and network, written before
 * the provider is called, its idempotency key derived from it), and a merchant is never told to send
 * funds to an address that is not bound, validated and active while settlement is verified.
 */
import { Data, Effect, Option } from "effect"
import { Settings } from "../Config.js"
import type { AuthenticatedMerchant } from "../Domain/Merchant.js"
import { isValidAddress, type Network } from "../Domain/WalletAddress.js"
import { Metrics } from "../Ops/Metrics.js"
import { type ProviderWallet, WalletProvider, type WalletProviderUnavailable } from "../Providers/WalletProvider.js"
import { idempotencyKeyOf, type WalletRow, WalletsRepo } from "./WalletsRepo.js"

export class WalletIssuanceOff extends Data.TaggedError("WalletIssuanceOff")<{ readonly reason: string }> {}
export class WalletMissing extends Data.TaggedError("WalletMissing") {}
export class WalletNotStarted extends Data.TaggedError("WalletNotStarted") {}
/** The provider's state could not be verified; the saved state is left as it is (and readable). */
export class WalletUnverified extends Data.TaggedError("WalletUnverified")<{ readonly detail: string }> {}

export class Wallets extends Effect.Service<Wallets>()("Wallets", {
  effect: Effect.gen(function*() {
    const settings = yield* Settings
    const requests = yield* WalletsRepo
    const provider = yield* WalletProvider
    const metrics = yield* Metrics

    const providerCalls = metrics.counter({
      name: "wallet_provider_calls_total",
      help: "Calls to the deposit wallet provider, by call and outcome",
      labelNames: ["call", "outcome"]
    })
    const byState = metrics.gauge({ name: "wallet_requests", help: "Deposit wallet requests, by state", labelNames: ["state"] })
    yield* metrics.onScrape(Effect.gen(function*() {
      const counts = yield* requests.countByState.pipe(Effect.orDie)
      for (const state of ["prepared", "creation_started", "requires_reconciliation", "bound"]) {
        byState.set({ state }, counts.find((c) => c.status === state)?.n ?? 0)
      }
    }))

    /** A provider call, counted by outcome. */
    const call = <A>(name: string, effect: Effect.Effect<A, WalletProviderUnavailable>) =>
      effect.pipe(Effect.tapBoth({
        onSuccess: () => Effect.sync(() => providerCalls.inc({ call: name, outcome: "ok" })),
        onFailure: (e) => Effect.sync(() => providerCalls.inc({ call: name, outcome: e.maybeReached ? "answer_lost" : "unavailable" }))
      }))

    /** DepositWallet of spec 2.3. */
    const view = (row: WalletRow) => ({
      id: row.id,
      provider: provider.name,
      currency: "USDT" as const,
      network: row.network,
      status: row.status,
      address: row.status === "bound" ? row.address : null,
      memo: row.status === "bound" && row.memo !== null && row.memo !== "" ? row.memo : null,
      can_deposit: row.status === "bound" && row.providerStatus === "active" && settings.walletSettlementVerified,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString()
    })

    /** DepositWalletList of spec 2.3, from saved state only. */
    const list = (merchant: AuthenticatedMerchant) =>
      Effect.map(requests.listOf(merchant.id), (rows) => ({
        issuance_enabled: settings.walletIssuanceEnabled,
        can_create: settings.walletIssuanceEnabled && settings.walletSettlementVerified && merchant.status === "active",
        wallets: rows.map(view)
      })).pipe(Effect.orDie, Effect.withSpan("Wallets.list"))

    /**
     * Binds the provider's wallet to the request when the provider has bound an address that is
     * well-formed for the network; otherwise the request stays as `unbound` says.
     */
    const settleFrom = (row: WalletRow, from: ReadonlyArray<WalletRow["status"]>, found: ProviderWallet) =>
      Effect.gen(function*() {
        if (found.state === "bound" && found.address !== null && isValidAddress(row.network, found.address)) {
          return yield* requests.move(row.id, from, "bound", {
            providerWalletId: found.providerWalletId,
            address: found.address,
            memo: found.memo,
            providerStatus: found.status
          })
        }
        if (found.state === "bound") {
          yield* Effect.logWarning("wallet provider bound an address that is not valid for the network; not bound").pipe(
            Effect.annotateLogs({ wallet_id: row.id, network: row.network })
          )
          yield* requests.move(row.id, from, "requires_reconciliation", { providerWalletId: found.providerWalletId })
          return yield* new WalletUnverified({ detail: "the provider's address for this wallet is not valid for its network" })
        }
        return yield* requests.move(row.id, from, "creation_started", { providerWalletId: found.providerWalletId })
      })

    /**
     * POST /deposits/wallets: the merchant's request for the network, created at the provider when it
     * has not been yet. A repeat returns the saved request and never creates again.
     */
    const request = (merchant: AuthenticatedMerchant, network: Network) =>
      Effect.gen(function*() {
        if (!settings.walletIssuanceEnabled) return yield* new WalletIssuanceOff({ reason: "New deposit wallets are not issued at present." })
        if (!settings.walletSettlementVerified) {
          return yield* new WalletIssuanceOff({ reason: "Deposit settlement is not verified at present; no new wallets are issued." })
        }
        const saved = yield* requests.prepare(merchant.id, network)
        if (saved.status !== "prepared") return view(saved)
        // only the request that moves it to creation_started calls the provider
        const started = yield* requests.move(saved.id, ["prepared"], "creation_started")
        if (started === undefined) return view(Option.getOrThrow(yield* requests.byId(saved.id)))
        const created = yield* call("create", provider.createWallet({ idempotencyKey: idempotencyKeyOf(started.id), merchantId: merchant.id, network })).pipe(
          Effect.catchTag("WalletProviderUnavailable", (e) =>
            Effect.zipRight(
              // not reached: nothing was created, a later request may create; maybe reached: only a read can say
              requests.move(started.id, ["creation_started"], e.maybeReached ? "requires_reconciliation" : "prepared"),
              Effect.fail(new WalletUnverified({ detail: e.detail }))
            ))
        )
        const settled = yield* settleFrom(started, ["creation_started"], created)
        return view(settled ?? Option.getOrThrow(yield* requests.byId(started.id)))
      }).pipe(
        Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }),
        Effect.withSpan("Wallets.request")
      )

    /**
     * POST /deposits/wallets/{id}/reconcile: provider reads only. A pending creation is bound, left
     * pending, or (when the provider never got it) made `prepared` again, to be requested anew under
     * the same key; a bound wallet's active or disabled status is refreshed, never its address.
     */
    const reconcile = (merchant: AuthenticatedMerchant, walletId: string) =>
      Effect.gen(function*() {
        const found = yield* requests.byId(walletId)
        if (Option.isNone(found) || found.value.merchantId !== merchant.id) return yield* new WalletMissing()
        const row = found.value
        if (row.status === "prepared") return yield* new WalletNotStarted()
        const read = yield* call("read", provider.findWallet(idempotencyKeyOf(row.id))).pipe(
          Effect.mapError((e) => new WalletUnverified({ detail: e.detail }))
        )
        if (row.status === "bound") {
          if (read === undefined || read.address !== row.address) {
            return yield* new WalletUnverified({ detail: "the provider's record of this wallet does not match the saved binding" })
          }
          const refreshed = yield* requests.refreshStatus(row.id, read.status)
          return view(refreshed ?? row)
        }
        const from = ["creation_started", "requires_reconciliation"] as const
        const moved = read === undefined
          ? yield* requests.move(row.id, from, "prepared")
          : yield* settleFrom(row, from, read)
        return view(moved ?? Option.getOrThrow(yield* requests.byId(row.id)))
      }).pipe(
        Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }),
        Effect.withSpan("Wallets.reconcile")
      )

    return { list, request, reconcile, view } as const
  }),
  dependencies: [WalletsRepo.Default, Metrics.Default]
}) {}
