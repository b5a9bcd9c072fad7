/**
 * The SQL of buy-by-name cycles (BuyByName.ts): a cycle's idempotency record in purchase_requests
 * keeps its parameters, deadline, state and the lease of the process running it
 * (`PurchaseHandover.owner`). Every statement that changes a cycle's record requires this process
 * to own it.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { PurchaseHandover } from "./Handover.js"
import { CustomIdKey } from "./Repo.js"

/** A running cycle whose process died, as the recovery claims it. */
const AbandonedCycle = Schema.Struct({
  merchantId: Schema.String,
  customId: Schema.String,
  marketHashName: Schema.NullOr(Schema.String),
  tradeUrl: Schema.String,
  steamId: Schema.String,
  maxPrice: Schema.NullOr(Schema.String),
  estimatedTime: Schema.NullOr(Schema.Number),
  deadline: Schema.NullOr(Schema.DateFromSelf)
})

const NewCycle = Schema.Struct({
  merchantId: Schema.String,
  customId: Schema.String,
  marketHashName: Schema.String,
  tradeUrl: Schema.String,
  steamId: Schema.String,
  /** max_price as the client wrote it, in decimal text. */
  maxPrice: Schema.String,
  estimatedTime: Schema.NullOr(Schema.Number),
  deadline: Schema.DateFromSelf,
  leaseSeconds: Schema.Number
})

const anyRow = Schema.Struct({})

export class CyclesRepo extends Effect.Service<CyclesRepo>()("CyclesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const owner = (yield* PurchaseHandover).owner
    const record = (key: typeof CustomIdKey.Type) => sql`merchant_id = ${key.merchantId} AND custom_id = ${key.customId}`

    const insertRow = SqlSchema.findOne({
      Request: NewCycle,
      Result: anyRow,
      execute: (c) =>
        sql`
          INSERT INTO purchase_requests (merchant_id, custom_id, kind, market_hash_name, target_trade_url, target_steam_id, cycle_state,
                                         max_price, estimated_time, cycle_deadline, cycle_owner, cycle_lease_until)
          VALUES (${c.merchantId}, ${c.customId}, 'by_name', ${c.marketHashName}, ${c.tradeUrl},
                  ${c.steamId}, 'running', ${c.maxPrice}, ${c.estimatedTime}, ${c.deadline},
                  ${owner}, now() + make_interval(secs => ${c.leaseSeconds}))
          ON CONFLICT (merchant_id, custom_id) DO NOTHING RETURNING custom_id`
    })
    /** Saves a new cycle's record, running and leased to this process: false when the custom_id is taken. */
    const insert = (cycle: typeof NewCycle.Type) => Effect.map(insertRow(cycle), Option.isSome)

    const holdRow = SqlSchema.findOne({
      Request: CustomIdKey,
      Result: anyRow,
      execute: (key) =>
        sql`SELECT 1 FROM purchase_requests WHERE ${record(key)} AND cycle_state = 'running' AND cycle_owner = ${owner}
            FOR UPDATE`
    })
    /** Locks the cycle's record for the rest of the transaction: false if this process no longer runs it. */
    const hold = (key: typeof CustomIdKey.Type) => Effect.map(holdRow(key), Option.isSome)

    /** Renews this process's lease of the cycle. */
    const renewLease = SqlSchema.void({
      Request: Schema.Struct({ ...CustomIdKey.fields, leaseSeconds: Schema.Number }),
      execute: ({ leaseSeconds, ...key }) =>
        sql`UPDATE purchase_requests SET cycle_lease_until = now() + make_interval(secs => ${leaseSeconds})
            WHERE ${record(key)} AND cycle_owner = ${owner}`
    })

    /** Ends this process's lease of the cycle now, for another process to take it over. */
    const giveUp = SqlSchema.void({
      Request: CustomIdKey,
      execute: (key) => sql`UPDATE purchase_requests SET cycle_lease_until = now() WHERE ${record(key)} AND cycle_owner = ${owner}`
    })

    /** Closes the cycle: done, no lease. */
    const close = SqlSchema.void({
      Request: CustomIdKey,
      execute: (key) => sql`UPDATE purchase_requests SET cycle_state = 'done', cycle_lease_until = NULL WHERE ${record(key)} AND cycle_owner = ${owner}`
    })

    /** Deletes the cycle's record (it bought nothing: the request may be sent again). */
    const remove = SqlSchema.void({
      Request: CustomIdKey,
      execute: (key) => sql`DELETE FROM purchase_requests WHERE ${record(key)} AND cycle_owner = ${owner}`
    })

    /**
     * Takes over up to `limit` running cycles whose lease ran out (their process died), leased to
     * this process for `leaseSeconds`; their records as saved.
     */
    const claimAbandoned = SqlSchema.findAll({
      Request: Schema.Struct({ limit: Schema.Number, leaseSeconds: Schema.Number }),
      Result: AbandonedCycle,
      execute: ({ leaseSeconds, limit }) =>
        sql`
          UPDATE purchase_requests SET cycle_owner = ${owner}, cycle_lease_until = now() + make_interval(secs => ${leaseSeconds})
          WHERE (merchant_id, custom_id) IN (
            SELECT merchant_id, custom_id FROM purchase_requests
            WHERE cycle_state = 'running' AND (cycle_lease_until IS NULL OR cycle_lease_until < now())
            ORDER BY cycle_lease_until NULLS FIRST LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING merchant_id AS "merchantId", custom_id AS "customId", market_hash_name AS "marketHashName",
                    target_trade_url AS "tradeUrl", target_steam_id AS "steamId", max_price AS "maxPrice",
                    estimated_time AS "estimatedTime", cycle_deadline AS "deadline"`
    })

    return { insert, hold, renewLease, giveUp, close, remove, claimAbandoned } as const
  }),
  dependencies: [PurchaseHandover.Default]
}) {}
