/**
 * Merchants and their credentials: creation, status, key rotation, webhook secret rotation,
 * legacy deposit addresses, and key authentication with a small cache (KeyCache.ts) that is
 * dropped at once on any change (in this process directly, in the others through pg_notify).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schema, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { isConnectionLossCause } from "../Db/ConnectionLoss.js"
import { LISTENING } from "../Db/Listen.js"
import { Timestamp } from "../Domain/Db.js"
import { type AuthenticatedMerchant, Merchant, MerchantId, MerchantStatus } from "../Domain/Merchant.js"
import { BalanceCache } from "../Ledger/BalanceCache.js"
import { Fibers } from "../Ops/Fibers.js"
import { makeKeyCache } from "./KeyCache.js"
import { generateApiKey, generateWebhookSecret, hashApiKey, isWellFormedApiKey, last4 } from "./Keys.js"

const AUTH_CHANGED_CHANNEL = "merchant_auth_changed"
/** A safety net only: changes invalidate the cache through notifications. */
const AUTH_CACHE_TTL_MS = 2_000
/** A key in use is read again after this long, before its entry expires (Merchants/KeyCache.ts). */
const AUTH_CACHE_REFRESH_AFTER_MS = 1_000
const AUTH_CACHE_MAX = 100_000

const MerchantRow = Schema.Struct({
  id: MerchantId,
  name: Schema.String,
  status: MerchantStatus,
  webhookUrl: Schema.NullOr(Schema.String),
  legacyTrc20: Schema.NullOr(Schema.String),
  legacyBep20: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

const merchantColumns = (sql: SqlClient.SqlClient) =>
  sql`
  id, name, status, webhook_url AS "webhookUrl", legacy_trc20 AS "legacyTrc20", legacy_bep20 AS "legacyBep20",
  created_at AS "createdAt", updated_at AS "updatedAt"`

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
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const fibers = yield* Fibers
    const balanceCache = yield* BalanceCache

    const lookupKey = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ id: MerchantId, name: Schema.String, status: MerchantStatus }),
      execute: (hash) =>
        sql`
        SELECT m.id, m.name, m.status FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
        WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`
    })
    const keys = yield* makeKeyCache((hash) => lookupKey(hash).pipe(Effect.orDie), {
      ttlMs: AUTH_CACHE_TTL_MS,
      refreshAfterMs: AUTH_CACHE_REFRESH_AFTER_MS,
      maxEntries: AUTH_CACHE_MAX,
      // while the database is out of reach, a key known before goes on reading the catalogue from memory
      servesStaleOn: isConnectionLossCause
    })
    /** Names this process in its notifications. */
    const processOrigin = randomUUID()
    /**
     * Drops this process's cache now; other processes' at commit (sql-pg's own notify sends
     * invalid SQL). The payload names this process, whose callers forget again once they have
     * committed: its own notification need not empty what was cached since, which is fresh.
     */
    const announce = (merchantId: string) =>
      Effect.sync(() => keys.forget(merchantId)).pipe(
        Effect.zipRight(sql`SELECT pg_notify(${AUTH_CHANGED_CHANNEL}, ${`${merchantId} ${processOrigin}`})`)
      )

    /** Told of each committed change of a merchant's keys or status (undefined: every merchant's may have changed unheard). */
    const authChangeListeners = new Set<(merchantId: string | undefined) => void>()

    // Every process's changes arrive here once committed (this one's too); a lost listener is
    // restarted by the fiber supervisor, and what was cached before it listens again may have
    // changed unheard: the cache starts empty.
    yield* fibers.supervise("merchant-auth-invalidation", (beat) =>
      pg.listen(AUTH_CHANGED_CHANNEL).pipe(
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

    const findById = SqlSchema.findOne({
      Request: Schema.String,
      Result: MerchantRow,
      execute: (id) => sql`SELECT ${merchantColumns(sql)} FROM merchants WHERE id = ${id}`
    })

    const get = (id: string) =>
      Schema.is(Schema.UUID)(id) ? findById(id).pipe(Effect.map(Option.map((row) => new Merchant(row))), Effect.orDie) : Effect.succeed(Option.none())

    const findByName = SqlSchema.findAll({
      Request: Schema.Struct({ pattern: Schema.optional(Schema.String), after: Schema.optional(Schema.String), limit: Schema.Number }),
      Result: MerchantRow,
      execute: ({ after, limit, pattern }) =>
        sql`SELECT ${merchantColumns(sql)} FROM merchants
          WHERE ${pattern === undefined ? sql`TRUE` : sql`name ILIKE ${pattern}`}
            AND ${after === undefined ? sql`TRUE` : sql`name > ${after}`}
          ORDER BY name LIMIT ${limit}`
    })

    /** Merchants by name, those whose name contains `name` (any case) if given, after the name `after`. */
    const list = (query: { readonly name?: string | undefined; readonly after?: string | undefined; readonly limit: number }) =>
      // one more than a page: whether there is a next one
      findByName({
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
      sql.withTransaction(Effect.gen(function*() {
        const id = randomUUID()
        const apiKey = generateApiKey()
        const webhookSecret = generateWebhookSecret()
        const inserted = yield* sql`INSERT INTO merchants (id, name, webhook_url, webhook_secret)
                   VALUES (${id}, ${input.name}, ${input.webhookUrl}, ${webhookSecret})
                   ON CONFLICT (name) DO NOTHING RETURNING id`
        if (inserted.length === 0) return Option.none<CreatedMerchant>()
        yield* sql`INSERT INTO api_keys (id, merchant_id, key_hash, last4)
                   VALUES (${randomUUID()}, ${id}, ${hashApiKey(apiKey)}, ${last4(apiKey)})`
        yield* sql`INSERT INTO balances (merchant_id) VALUES (${id})`
        const merchant = yield* findById(id).pipe(Effect.flatMap(Effect.orElseFail(() => new Error("merchant vanished"))))
        return Option.some<CreatedMerchant>({ merchant: new Merchant(merchant), apiKey, webhookSecret })
      })).pipe(Effect.orDie, Effect.withSpan("Merchants.create"))

    const update = (id: string, changes: MerchantChanges) =>
      Effect.gen(function*() {
        const current = yield* get(id)
        if (Option.isNone(current)) return current
        const status = changes.status ?? current.value.status
        const webhookUrl = changes.webhookUrl === undefined ? current.value.webhookUrl : changes.webhookUrl
        yield* sql.withTransaction(Effect.all([
          sql`UPDATE merchants SET status = ${status}, webhook_url = ${webhookUrl}, updated_at = now() WHERE id = ${id}`,
          // blocking ends the merchant's cabinet sessions (CONTRACT 7)
          status === "blocked" ? sql`DELETE FROM cabinet_sessions WHERE merchant_id = ${id}` : Effect.void,
          announce(id)
        ]))
        yield* Effect.sync(() => keys.forget(id))
        return yield* get(id)
      }).pipe(Effect.orDie, Effect.withSpan("Merchants.update"))

    const rotateApiKey = (id: string) =>
      sql.withTransaction(Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(id)) return Option.none<string>()
        const rows = yield* sql`SELECT id FROM merchants WHERE id = ${id} FOR UPDATE`
        if (rows.length === 0) return Option.none<string>()
        const apiKey = generateApiKey()
        yield* sql`UPDATE api_keys SET revoked_at = now() WHERE merchant_id = ${id} AND revoked_at IS NULL`
        yield* sql`INSERT INTO api_keys (id, merchant_id, key_hash, last4)
                   VALUES (${randomUUID()}, ${id}, ${hashApiKey(apiKey)}, ${last4(apiKey)})`
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
        const keep = previousValidSeconds > 0
        const rows = yield* sql`
          UPDATE merchants SET webhook_secret = ${secret},
            webhook_secret_previous = ${keep ? sql`webhook_secret` : sql`NULL`},
            webhook_secret_previous_until = ${keep ? sql`now() + make_interval(secs => ${previousValidSeconds})` : sql`NULL`},
            updated_at = now()
          WHERE id = ${id} RETURNING id`
        return rows.length === 0 ? Option.none<string>() : Option.some(secret)
      }).pipe(Effect.orDie, Effect.withSpan("Merchants.rotateWebhookSecret"))

    const findWebhookSecret = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ webhook_secret: Schema.String }),
      execute: (id) => sql`SELECT webhook_secret FROM merchants WHERE id = ${id}`
    })
    const webhookSecret = (id: string) => findWebhookSecret(id).pipe(Effect.map(Option.map((row) => row.webhook_secret)), Effect.orDie)

    const setLegacyAddresses = (id: string, addresses: { readonly trc20: string | null; readonly bep20: string | null }) =>
      Effect.gen(function*() {
        if (!Schema.is(Schema.UUID)(id)) return Option.none<Merchant>()
        // the Balance shows them: a statement of its own, announced before and after (BalanceCache.ts)
        yield* balanceCache.changed(id)
        yield* sql`UPDATE merchants SET legacy_trc20 = ${addresses.trc20}, legacy_bep20 = ${addresses.bep20},
                   updated_at = now() WHERE id = ${id}`
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
      onAuthChange
    } as const
  }),
  dependencies: [Fibers.Default, BalanceCache.Default]
}) {}
