/**
 * The SQL of the bulk write of new listings (NewItems.ts): on PostgreSQL the items' COPY and their
 * log rows at the head, on PGlite the change log's upserts as one statement of arrays in binary,
 * each in one transaction that wakes every engine at its commit.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { PgliteProtocol } from "../Db/BinaryStatement.js"
import { DirectTransactions } from "../Db/Database.js"
import { Int8 } from "../Domain/Db.js"
import { CHANGES_CHANNEL } from "./ChangeLog.js"

const decodeHead = Schema.decodeUnknownSync(Schema.Struct({ epoch: Schema.Number, head: Int8 }))
/** The array upsert's one row in text: its first seq, the epoch, the ids in seq order (ChangeLog.upsertArrays). */
const decodeArraysAnswer = Schema.decodeUnknownSync(Schema.Tuple(Schema.Tuple(
  Schema.NullOr(Schema.NumberFromString),
  Schema.NullOr(Schema.NumberFromString),
  Schema.NullOr(Schema.String)
)))

/** The rows NewItems.prepareNew makes, in this order of columns. */
const COPY_ITEMS = "COPY catalogue_items (id, market_hash_name, price_cents, provider_price_cents, status, item, sim, source) FROM STDIN"
/**
 * The copied items' log rows at the head, in the page's order, their texts read from the items
 * just copied (sent once); $1 the page's ids. Answers the epoch and the new head. A copied item
 * without its log row would leave a gap in the log: that fails the transaction (never expected).
 */
const LOG_COPIED = `
  WITH head AS (
    UPDATE catalogue_state SET head_seq = head_seq + cardinality($1::uuid[]) RETURNING epoch, head_seq),
  logged AS (
    INSERT INTO catalogue_changes (seq, epoch, op, item_id, item)
    SELECT head.head_seq - cardinality($1::uuid[]) + page.n, head.epoch, 'upsert', items.id, items.item
    FROM head, unnest($1::uuid[]) WITH ORDINALITY AS page (id, n) JOIN catalogue_items items ON items.id = page.id
    RETURNING 1)
  SELECT head.epoch, head.head_seq AS head FROM head
  WHERE assert_true((SELECT count(*) FROM logged) = cardinality($1::uuid[]), 'NewItems: a copied item without its log row')`
const NOTIFY_HEAD = "SELECT pg_notify($1, head_seq::text) FROM catalogue_state"

export class NewItemsRepo extends Effect.Service<NewItemsRepo>()("NewItemsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const direct = Option.flatten(yield* Effect.serviceOption(DirectTransactions))
    const protocol = Option.flatten(yield* Effect.serviceOption(PgliteProtocol))

    /** Runs `work` in one transaction (its statements: `upsertArrays`, `notifyHead`). */
    const withTransaction = <A, E, R>(work: Effect.Effect<A, E, R>) => sql.withTransaction(work)

    /**
     * On PGlite: runs the change log's upserts of arrays from their messages written ahead
     * (BinaryStatement.ts); its first seq, epoch and ids logged in seq order (comma-separated), all
     * null when it logged nothing.
     */
    const upsertArrays = Option.map(protocol, (run) => (messages: Uint8Array) => Effect.map(run(messages), (rows) => decodeArraysAnswer(rows)[0]))

    /** Wakes every engine at the commit: the log's head, notified on CHANGES_CHANNEL. */
    const notifyHead = sql.unsafe(NOTIFY_HEAD, [CHANGES_CHANNEL]).pipe(Effect.asVoid)

    /**
     * On PostgreSQL: COPY of the items (`items`: their COPY rows), their log rows at the head (`ids`
     * in the page's order) and the notification, in one round trip with the commit: the head's row
     * lock is held inside PostgreSQL only, from the log's insert to the commit, while another page's
     * write copies its items. The epoch and the new head; undefined when it was rolled back (one of
     * the items was stored meanwhile). `sent` is called once the COPY has ended (PostgreSQL answered
     * it, or the connection is gone): nothing reads `items` after that.
     */
    const copyNew = Option.map(
      direct,
      (transaction) => (items: Buffer, ids: ReadonlyArray<string>, sent: () => void) =>
        Effect.promise(() =>
          transaction(async (session) => {
            try {
              const answers = await session.queriesAndCommit([
                [COPY_ITEMS, [], items],
                [LOG_COPIED, [ids]],
                [NOTIFY_HEAD, [CHANGES_CHANNEL]]
              ])
              return answers === undefined ? undefined : decodeHead(answers[1]?.[0])
            } finally {
              sent()
            }
          })
        )
    )

    return { withTransaction, upsertArrays, notifyHead, copyNew } as const
  })
}) {}
