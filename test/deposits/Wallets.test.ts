/**
 * The wallet request's state machine (spec 3.2) in process, on a fresh test database, with a
 * scripted provider (the WalletProvider port's test layer): the moves a black-box test cannot
 * bring about, such as a creation that never reached the provider, and what the provider may say
 * that must never be believed (an address invalid for its network, another address for a bound
 * wallet).
 */
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { createHash } from "node:crypto"
import { Wallets } from "../../src/Deposits/Wallets.js"
import { idempotencyKeyOf, WalletsRepo } from "../../src/Deposits/WalletsRepo.js"
import type { AuthenticatedMerchant, MerchantId } from "../../src/Domain/Merchant.js"
import { bscAddress, tronAddress } from "../../src/Domain/WalletAddress.js"
import { type ProviderWallet, WalletProvider, WalletProviderUnavailable } from "../../src/Providers/WalletProvider.js"
import { inProcess } from "../support/in-process.js"

/** What the scripted provider answers next; every call is recorded with its key. */
const script = {
  create: (_key: string): Effect.Effect<ProviderWallet, WalletProviderUnavailable> => Effect.die("no create scripted"),
  find: (_key: string): Effect.Effect<ProviderWallet | undefined, WalletProviderUnavailable> => Effect.die("no read scripted"),
  calls: [] as Array<string>
}
const ProviderTest = Layer.succeed(WalletProvider, {
  name: "walletpay",
  createWallet: (request) =>
    Effect.suspend(() => {
      script.calls.push(`create ${request.idempotencyKey}`)
      return script.create(request.idempotencyKey)
    }),
  findWallet: (key) =>
    Effect.suspend(() => {
      script.calls.push(`read ${key}`)
      return script.find(key)
    }),
  verifyCallback: () => Effect.succeed(Either.left("not in this test"))
})

const account = (seed: string) => createHash("sha256").update(seed).digest()
const bound = (address: string, status: "active" | "disabled" = "active"): ProviderWallet => ({
  providerWalletId: `wp_${address.slice(-8)}`,
  state: "bound",
  address,
  memo: null,
  status
})
const pending: ProviderWallet = { providerWalletId: "wp_pending", state: "pending", address: null, memo: null, status: "active" }
const lost = new WalletProviderUnavailable({ detail: "lost", maybeReached: true })

const walletsWith = (env: Record<string, string>) => inProcess(Layer.merge(Wallets.Default, WalletsRepo.Default).pipe(Layer.provide(ProviderTest)), env)
const WalletsTest = walletsWith({ WALLET_ISSUANCE_ENABLED: "true" })

/** A bound wallet as saved (made without the provider: these layers' switches forbid creation). */
const boundWallet = (merchantId: string, address: string) =>
  Effect.gen(function*() {
    const requests = yield* WalletsRepo
    const saved = yield* requests.prepare(merchantId, "tron")
    yield* requests.move(saved.id, ["prepared"], "creation_started")
    return (yield* requests.move(saved.id, ["creation_started"], "bound", {
      providerWalletId: `wp_${address.slice(-8)}`,
      address,
      memo: null,
      providerStatus: "active"
    }))!
  })

/** A merchant row for the wallets' foreign key. */
const merchant = (name: string) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const id = crypto.randomUUID()
    yield* sql`INSERT INTO merchants (id, name, webhook_secret) VALUES (${id}, ${name}, 's')`
    return { id: id as MerchantId, name, status: "active" } satisfies AuthenticatedMerchant
  })

layer(WalletsTest, { timeout: 60_000, excludeTestServices: true })("wallet requests", (it) => {
  it.effect("a creation that never reached the provider: reconcile finds nothing and makes it prepared; the next request creates under the same key", () =>
    Effect.gen(function*() {
      const wallets = yield* Wallets
      const requests = yield* WalletsRepo
      const m = yield* merchant("never-reached")
      // a process that died after saving creation_started and before calling the provider
      const saved = yield* requests.prepare(m.id, "tron")
      yield* requests.move(saved.id, ["prepared"], "creation_started")
      script.calls = []
      script.find = () => Effect.succeed(undefined)
      const reconciled = yield* wallets.reconcile(m, saved.id)
      expect(reconciled.status).toBe("prepared")
      const address = tronAddress(account("never-reached"))
      script.create = () => Effect.succeed(bound(address))
      const created = yield* wallets.request(m, "tron")
      expect([created.id, created.status, created.address]).toEqual([saved.id, "bound", address])
      expect(script.calls).toEqual([`read ${idempotencyKeyOf(saved.id)}`, `create ${idempotencyKeyOf(saved.id)}`])
    }))

  it.effect("requires_reconciliation moves by what the provider says: nothing (prepared), pending (creation_started), bound", () =>
    Effect.gen(function*() {
      const wallets = yield* Wallets
      const m = yield* merchant("reconciling")
      script.create = () => Effect.fail(lost)
      const failed = yield* Effect.flip(wallets.request(m, "bsc"))
      expect(failed._tag).toBe("WalletUnverified")
      const [saved] = (yield* wallets.list(m)).wallets
      expect(saved!.status).toBe("requires_reconciliation")
      script.find = () => Effect.succeed(pending)
      expect((yield* wallets.reconcile(m, saved!.id)).status).toBe("creation_started")
      const address = bscAddress(account("reconciling"))
      script.find = () => Effect.succeed(bound(address))
      expect(yield* wallets.reconcile(m, saved!.id)).toMatchObject({ status: "bound", address, can_deposit: true })

      // and from requires_reconciliation with nothing at the provider: prepared
      const other = yield* merchant("reconciling-nothing")
      script.create = () => Effect.fail(lost)
      yield* Effect.flip(wallets.request(other, "tron"))
      const [again] = (yield* wallets.list(other)).wallets
      script.find = () => Effect.succeed(undefined)
      expect((yield* wallets.reconcile(other, again!.id)).status).toBe("prepared")
    }))

  it.effect("a provider that binds an address invalid for the network is not believed: no address, do not send funds, 502", () =>
    Effect.gen(function*() {
      const wallets = yield* Wallets
      const m = yield* merchant("invalid-address")
      const valid = tronAddress(account("invalid-address"))
      const tampered = valid.slice(0, -1) + (valid.endsWith("a") ? "b" : "a")
      for (const address of [tampered, bscAddress(account("x")), "Tnotbase58!!"]) {
        script.create = () => Effect.succeed(bound(address))
        script.find = () => Effect.succeed(bound(address))
        const [saved] = (yield* wallets.list(m)).wallets
        const refused = saved === undefined || saved.status === "prepared"
          ? yield* Effect.flip(wallets.request(m, "tron"))
          : yield* Effect.flip(wallets.reconcile(m, saved.id))
        expect(refused._tag).toBe("WalletUnverified")
        const [after] = (yield* wallets.list(m)).wallets
        expect(after).toMatchObject({ status: "requires_reconciliation", address: null, can_deposit: false })
      }
      script.find = () => Effect.succeed(bound(valid))
      const [saved] = (yield* wallets.list(m)).wallets
      expect(yield* wallets.reconcile(m, saved!.id)).toMatchObject({ status: "bound", address: valid })
    }))

  it.effect("a bound wallet's address never changes: another address from the provider is 502, the saved one stays", () =>
    Effect.gen(function*() {
      const wallets = yield* Wallets
      const m = yield* merchant("bound-stays")
      const address = bscAddress(account("bound-stays"))
      script.create = () => Effect.succeed(bound(address))
      const created = yield* wallets.request(m, "bsc")
      script.find = () => Effect.succeed(bound(bscAddress(account("elsewhere"))))
      expect((yield* Effect.flip(wallets.reconcile(m, created.id)))._tag).toBe("WalletUnverified")
      script.find = () => Effect.succeed(undefined)
      expect((yield* Effect.flip(wallets.reconcile(m, created.id)))._tag).toBe("WalletUnverified")
      expect((yield* wallets.list(m)).wallets).toMatchObject([{ id: created.id, status: "bound", address, can_deposit: true }])
      // a prepared request cannot be reconciled; another merchant's wallet is not found
      const other = yield* merchant("bound-stays-other")
      expect((yield* Effect.flip(wallets.reconcile(other, created.id)))._tag).toBe("WalletMissing")
    }))
})

layer(walletsWith({ WALLET_ISSUANCE_ENABLED: "false" }), { timeout: 60_000, excludeTestServices: true })("issuance disabled", (it) => {
  it.effect("a bound wallet can still be deposited to and reconciled; nothing can be created", () =>
    Effect.gen(function*() {
      const wallets = yield* Wallets
      const m = yield* merchant("issuance-off")
      const address = tronAddress(account("issuance-off"))
      const saved = yield* boundWallet(m.id, address)
      expect(yield* wallets.list(m)).toMatchObject({ issuance_enabled: false, can_create: false, wallets: [{ id: saved.id, can_deposit: true }] })
      expect((yield* Effect.flip(wallets.request(m, "bsc")))._tag).toBe("WalletIssuanceOff")
      script.find = () => Effect.succeed(bound(address, "disabled"))
      expect(yield* wallets.reconcile(m, saved.id)).toMatchObject({ id: saved.id, status: "bound", address, can_deposit: false })
    }))
})

layer(walletsWith({ WALLET_ISSUANCE_ENABLED: "true", WALLET_SETTLEMENT_VERIFIED: "false" }), { timeout: 60_000, excludeTestServices: true })(
  "settlement unverified",
  (it) => {
    it.effect("no wallet can be deposited to, bound and active though it is, and none can be created", () =>
      Effect.gen(function*() {
        const wallets = yield* Wallets
        const m = yield* merchant("unverified")
        const address = tronAddress(account("unverified"))
        const saved = yield* boundWallet(m.id, address)
        expect(yield* wallets.list(m)).toMatchObject({
          issuance_enabled: true,
          can_create: false,
          wallets: [{ id: saved.id, status: "bound", address, can_deposit: false }]
        })
        expect((yield* Effect.flip(wallets.request(m, "bsc")))._tag).toBe("WalletIssuanceOff")
        script.find = () => Effect.succeed(bound(address))
        expect((yield* wallets.reconcile(m, saved.id)).can_deposit).toBe(false)
      }))
  }
)
