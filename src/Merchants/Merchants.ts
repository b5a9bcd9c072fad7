/**
 * Merchants and their credentials: creation, status, key rotation, webhook secret rotation,
 * legacy deposit addresses, and key authentication with a small cache (KeyCache.ts) that is
 * dropped at once on any change (in this process directly, in the others through pg_notify).
 */
import { Effect, Option, Schema, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { isConnectionLossCause } from "../Db/ConnectionLoss.js"
import { LISTENING } from "../Db/Listen.js"
import { type AuthenticatedMerchant, Merchant, type MerchantStatus } from "../Domain/Merchant.js"
import { BalanceCache } from "../Ledger/BalanceCache.js"
import { Fibers } from "../Ops/Fibers.js"
import { makeKeyCache } from "./KeyCache.js"
import { generateApiKey, generateWebhookSecret, hashApiKey, isWellFormedApiKey, last4 } from "./Keys.js"
import { MerchantsRepo } from "./Repo.js"
/** A safety net only: changes invalidate the cache through notifications. */
const AUTH_CACHE_TTL_MS = 2_000
/** A key in use is read again after this long, before its entry expires (Merchants/KeyCache.ts). */
const AUTH_CACHE_REFRESH_AFTER_MS = 1_000
const AUTH_CACHE_MAX = 100_000

export interface CreatedMerchant {
  readonly merchant: Merchant
  readonly apiKey: string
  readonly webhookSecret: string
}

export interface MerchantChanges {
  readonly status?: MerchantStatus | undefined
  readonly webhookUrl?: string | null | undefined
}

export class Merchants extends Effect.Service<Merchants>()("Merchants", {
  scoped: Effect.gen(function*() {
    const repo = yield* MerchantsRepo
    const fibers = yield* Fibers
    const balanceCache = yield* BalanceCache

    const keys = yield* makeKeyCache((hash) => repo.byKeyHash(hash).pipe(Effect.orDie), {
      ttlMs: AUTH_CACHE_TTL_MS,
      refreshAfterMs: AUTH_CACHE_REFRESH_AFTER_MS,
      maxEntries: AUTH_CACHE_MAX,
      // while the database is out of reach, a key known before goes on reading the catalogue from memory
      servesStaleOn: isConnectionLossCause
    })
    /** Names this process in its notifications. */
    const processOrigin = randomUUID()
    /**
     * Drops this process's cache now; other processes' at commit. The payload names this process,
     * whose callers forget again once they have committed: its own notification need not empty
     * what was cached since, which is fresh.
     */
    const announce = (merchantId: string) =>
      Effect.sync(() => keys.forget(merchantId)).pipe(
        Effect.zipRight(repo.notifyAuthChange(`${merchantId} ${processOrigin}`))
      )

    /** Told of each committed change of a merchant's keys or status (undefined: every merchant's may have changed unheard). */
    const authChangeListeners = new Set<(merchantId: string | undefined) => void>()

    // Every process's changes arrive here once committed (this one's too); a lost listener is
    // restarted by the fiber supervisor, and what was cached before it listens again may have
    // changed unheard: the cache starts empty.
    yield* fibers.supervise("merchant-auth-invalidation", (beat) =>
      repo.authChanges.pipe(
        Stream.runForEach((payload) =>
          Effect.zipRight(
            beat,
            Effect.sync(() => {
              const [merchantId = "", origin] = payload.split(" ")
              if (payload === LISTENING) keys.clear()
              else if (origin !== processOrigin) keys.forget(merchantId)
              for (const listener of authChangeListeners) listener(payload === LISTENING ? undefined : merchantId)
            })
          )
        )
      ))

    /**
     * Calls `listener` after each committed change of a merchant's keys or status, in any process
     * (undefined: every merchant's may have changed unheard), while the scope lasts: what holds a
     * merchant's key beyond one request (an open feed) checks it again.
     */
    const onAuthChange = (listener: (merchantId: string | undefined) => void) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          authChangeListeners.add(listener)
        }),
        () =>
          Effect.sync(() => {
            authChangeListeners.delete(listener)
          })
      )

    const get = (id: string) =>
      Schema.is(Schema.UUID)(id) ? repo.byId(id).pipe(Effect.map(Option.map((row) => new Merchant(row))), Effect.orDie) : Effect.succeed(Option.none())

    /** Merchants by name, those whose name contains `name` (any case) if given, after the name `after`. */
    const list = (query: { readonly name?: string | undefined; readonly after?: string | undefined; readonly limit: number }) =>
      // one more than a page: whether there is a next one
      repo.byName({
        // LIKE's wildcards in the text are matched as themselves
        pattern: query.name === undefined ? undefined : `%${query.name.replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
        after: query.after,
        limit: query.limit + 1
      }).pipe(
        Effect.map((rows) => {
          const page = rows.slice(0, query.limit).map((row) => new Merchant(row))
          return { merchants: page, nextAfter: rows.length > query.limit ? page[page.length - 1]!.name : null }
        }),
        Effect.orDie,
        Effect.withSpan("Merchants.list")
      )

    /** A new merchant with its first key and an empty balance; None if the name is taken. */
    const create = (input: { readonly name: string; readonly webhookUrl: string | null }) =>
      repo.withTransaction(Effect.gen(function*() {
        const id = randomUUID()
        const apiKey = generateApiKey()
        const webhookSecret = generateWebhookSecret()
        if (!(yield* repo.insertMerchant({ id, name: input.name, webhookUrl: input.webhookUrl, webhookSecret }))) {
          return Option.none<CreatedMerchant>()
        }
        yield* repo.insertApiKey({ id: randomUUID(), merchantId: id, keyHash: hashApiKey(apiKey), last4: last4(apiKey) })
        yield* repo.insertBalance(id)
        const merchant = yield* repo.byId(id).pipe(Effect.flatMap(Effect.orElseFail(() => new Error("merchant vanished"))))
        return Option.some<CreatedMerchant>({ merchant: new Merchant(merchant), apiKey, webhookSecret })
      })).pipe(Effect.orDie, Effect.withSpan("Merchants.create"))

    const update = (id: string, changes: MerchantChanges) =>
      Effect.gen(function*() {
        const current = yield* get(id)
        if (Option.isNone(current)) return current
        const status = changes.status ?? current.value.status
        const webhookUrl = changes.webhookUrl === undefined ? current.value.webhookUrl : changes.webhookUrl
        yield* repo.withTransaction(Effect.all([
          repo.updateStatusAndWebhook({ id, status, webhookUrl }),
          // blocking ends the merchant's cabinet sessions (CONTRACT 7)
          status === "blocked" ? repo.deleteCabinetSessions(id) : Effect.void,
          announce(id)
        ]))
        yield* Effect.sync(() => keys.forget(id))
        return yield* get(id)
      }).pipe(Effect.orDie, Effect.withSpan("Merchants.update"))

    const rotateApiKey = (id: string) =>
      repo.withTransaction(Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(id)) return Option.none<string>()
        if (!(yield* repo.lockMerchant(id))) return Option.none<string>()
        const apiKey = generateApiKey()
        yield* repo.revokeApiKeys(id)
        yield* repo.insertApiKey({ id: randomUUID(), merchantId: id, keyHash: hashApiKey(apiKey), last4: last4(apiKey) })
        yield* announce(id)
        return Option.some(apiKey)
      })).pipe(
        // the old key is refused at once here, even before the commit reaches the cache again
        Effect.tap((key) => Option.isSome(key) ? Effect.sync(() => keys.forget(id)) : Effect.void),
        Effect.orDie,
        Effect.withSpan("Merchants.rotateApiKey")
      )

    /**
     * A new signing secret. With `previousValidSeconds` > 0 the one it replaces still signs
     * deliveries (X-Signature-Previous) for that long, so a receiver can switch without a gap; only
     * the immediate predecessor is kept, and 0 ends it at once (CONTRACT 4).
     */
    const rotateWebhookSecret = (id: string, previousValidSeconds = 0) =>
      Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(id)) return Option.none<string>()
        const secret = generateWebhookSecret()
        const found = yield* repo.setWebhookSecret({ id, secret, previousValidSeconds })
        return found ? Option.some(secret) : Option.none<string>()
      }).pipe(Effect.orDie, Effect.withSpan("Merchants.rotateWebhookSecret"))

    const webhookSecret = (id: string) => repo.webhookSecret(id).pipe(Effect.map(Option.map((row) => row.webhook_secret)), Effect.orDie)

    const setLegacyAddresses = (id: string, addresses: { readonly trc20: string | null; readonly bep20: string | null }) =>
      Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(id)) return Option.none<Merchant>()
        // the Balance shows them: a statement of its own, announced before and after (BalanceCache.ts)
        yield* balanceCache.changed(id)
        yield* repo.setLegacyAddresses({ id, trc20: addresses.trc20, bep20: addresses.bep20 })
        yield* balanceCache.changed(id)
        return yield* get(id)
      }).pipe(Effect.orDie, Effect.withSpan("Merchants.setLegacyAddresses"))

    /** The hash a key is known by in the cache; undefined for a malformed key. */
    const keyHashOf = (key: string): string | undefined => isWellFormedApiKey(key) ? hashApiKey(key) : undefined

    /**
     * The merchant a presented key belongs to. The key is looked up by its SHA-256 hash (an index
     * probe on a hash reveals nothing about the key through timing); unknown, revoked and
     * malformed keys are all `None`.
     */
    const authenticate = (key: string): Effect.Effect<Option.Option<AuthenticatedMerchant>> => {
      const hash = keyHashOf(key)
      return hash === undefined ? Effect.succeed(Option.none()) : keys.get(hash)
    }

    /**
     * The merchant of a key (by `keyHashOf`) found in the cache, without touching the database:
     * what authentication tries first (a miss leaves the key to `authenticate`, which fills it).
     */
    const cachedByKeyHash = (hash: string, now: number): AuthenticatedMerchant | undefined => keys.peek(hash, now)

    /** Whether no merchant exists yet (the embedded first start creates the demo one then). */
    const noneYet = repo.noneYet.pipe(Effect.orDie)

    return {
      create,
      get,
      list,
      update,
      rotateApiKey,
      rotateWebhookSecret,
      webhookSecret,
      setLegacyAddresses,
      authenticate,
      keyHashOf,
      cachedByKeyHash,
      onAuthChange,
      noneYet
    } as const
  }),
  dependencies: [MerchantsRepo.Default, Fibers.Default, BalanceCache.Default]
}) {}
