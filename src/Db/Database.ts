/**
 * The database layer: a PostgreSQL server when DATABASE_URL is set, otherwise the embedded PGlite
 * in DATA_DIR/pg. Migrations are applied before the layer is ready.
 */
import { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Predicate, Redacted } from "effect"
import { chmodSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { Settings } from "../Config.js"
import { PgliteProtocol } from "./BinaryStatement.js"
import { lockDataDir } from "./DataDirLock.js"
import { listenOnOwnConnection } from "./Listen.js"
import { migrate } from "./Migrations.js"
import { DbNotifications } from "./Notifications.js"
import * as Pglite from "./Pglite.js"
import { pipelined, type PipelinedStatement } from "./Pipeline.js"

export const DatabaseKind = (settings: Settings) => Option.isSome(settings.databaseUrl) ? "postgresql" : "pglite"

/** One read on the pool, outside any transaction: its rows, as pg returns them. */
export type DirectRead = (text: string, values: ReadonlyArray<unknown>) => Promise<ReadonlyArray<unknown>>

/**
 * Plain reads straight on the PostgreSQL pool that SqlClient uses, for the fast lane's hot reads
 * (a statement through @effect/sql costs about 150 µs of CPU more). None on PGlite: its one
 * session belongs to SqlClient's transactions.
 */
export class DirectReads extends Context.Tag("DirectReads")<DirectReads, Option.Option<DirectRead>>() {}

export interface DirectSession {
  /**
   * Statements sent at once (one round trip; the transaction's BEGIN goes with the first ones), a
   * COPY among them with its rows (Pipeline.ts). Their rows, in order; undefined when one of them
   * failed, which ends the transaction (rolled back).
   */
  readonly queries: (statements: ReadonlyArray<PipelinedStatement>) => Promise<ReadonlyArray<ReadonlyArray<unknown>> | undefined>
  /**
   * The transaction's last statements, sent together with its COMMIT (and its BEGIN, if they are
   * its only ones): one round trip, so the locks they take are held inside PostgreSQL only. A
   * statement that must not commit unless it did its work raises an error (`assert_true`):
   * PostgreSQL then skips the rest and the COMMIT, and the transaction is rolled back. Their rows,
   * in order, if it committed; undefined if it was rolled back.
   */
  readonly queriesAndCommit: (
    statements: ReadonlyArray<PipelinedStatement>
  ) => Promise<ReadonlyArray<ReadonlyArray<unknown>> | undefined>
}

/**
 * A transaction straight on one client of the pool, for the buy engine's batches: `work` issues its
 * statements with `queries` and ends the transaction with `queriesAndCommit`; when it returns
 * without (undefined, say), the transaction is rolled back. When `work` throws, the client is
 * rolled back and discarded, and the error is thrown on.
 */
export type DirectTransaction = <A>(work: (session: DirectSession) => Promise<A | undefined>) => Promise<A | undefined>

/** Direct transactions on the PostgreSQL pool; none on PGlite, for the reason of DirectReads. */
export class DirectTransactions extends Context.Tag("DirectTransactions")<DirectTransactions, Option.Option<DirectTransaction>>() {}

/**
 * Errors that leave a connection's prepared statements unusable: a cached plan whose result type
 * changed (a migration altered a table), a statement the connection should have and has not, or
 * has and should not. Such a connection is dropped, and the next one prepares afresh.
 */
const STALE_STATEMENT_CODES: ReadonlySet<unknown> = new Set(["0A000", "26000", "42P05"])
const stalePreparedStatements = (error: unknown) => Predicate.hasProperty(error, "code") && STALE_STATEMENT_CODES.has(error.code)

export const directTransaction = (pool: pg.Pool): DirectTransaction => async (work) => {
  const client = await pool.connect()
  let begun = false
  let ended = false
  let stale = false
  const rollback = async () => {
    ended = true
    await client.query("ROLLBACK")
  }
  const failed = (error: unknown) => {
    stale ||= stalePreparedStatements(error)
    return rollback().then(() => undefined)
  }
  /** The statements, after the transaction's BEGIN if none was sent; and how many were put before them. */
  const begin = (statements: ReadonlyArray<PipelinedStatement>) => {
    const sent = begun ? statements : [["BEGIN", []] as const, ...statements]
    const skipped = begun ? 0 : 1
    begun = true
    return { sent, skipped }
  }
  const queries = async (statements: ReadonlyArray<PipelinedStatement>) => {
    const { sent, skipped } = begin(statements)
    const outcome = await pipelined(client, sent)
    if (outcome._tag === "failed") return failed(outcome.error)
    return outcome.results.slice(skipped).map((result) => result.rows)
  }
  const queriesAndCommit = async (statements: ReadonlyArray<PipelinedStatement>) => {
    const { sent, skipped } = begin(statements)
    const outcome = await pipelined(client, [...sent, ["COMMIT", []]])
    const commitAt = skipped + statements.length
    if (outcome._tag === "done") {
      ended = true
      const committed = outcome.results[commitAt]!.command === "COMMIT"
      return committed ? outcome.results.slice(skipped, commitAt).map((result) => result.rows) : undefined
    }
    // a statement failed and PostgreSQL skipped the COMMIT: the transaction is to be rolled back
    if (outcome.at < commitAt) return failed(outcome.error)
    // no answer to the COMMIT: whether it committed is unknown, and the session is not reusable
    ended = true
    throw outcome.error
  }
  try {
    const value = await work({ queries, queriesAndCommit })
    if (!ended) await rollback()
    client.release(stale ? new Error("its prepared statements are out of date") : undefined)
    return value
  } catch (error) {
    // the session may be mid-transaction or broken: never hand it back to the pool
    if (!ended) await client.query("ROLLBACK").catch(() => undefined)
    client.release(error instanceof Error ? error : new Error(String(error)))
    throw error
  }
}

/** The service's pool of PostgreSQL connections. */
export const servicePool = (url: string): pg.Pool => {
  const pool = new pg.Pool({
    connectionString: url,
    max: 20,
    idleTimeoutMillis: 30_000,
    // a server that accepts the connection and never answers would hold a connect for good
    // (at start-up: silently, with no listener up)
    connectionTimeoutMillis: 10_000,
    application_name: "merchant-purchasing-service"
  })
  // a connection that breaks while idle is dropped by the pool; queries report their own errors
  pool.on("error", () => {})
  // A client checked out has no 'error' listener of the pool's (it takes its own off while the
  // client is lent), and one that breaks then (the server restarts, a failover, a killed backend)
  // emits 'error', which with no listener ends the process. directTransaction (and Pipeline.ts on
  // its client) hears of a broken connection through its queries only; @effect/sql-pg listens while
  // it holds a client (with `once` for a statement, which releases the client on that first error,
  // the pool's listener then back). So every client always has a listener: the break still reaches
  // its holder, whose queries fail (node-postgres fails the query in flight and every later one),
  // and the pool drops the client when it comes back broken.
  pool.on("connect", (client) => {
    client.on("error", () => {})
  })
  return pool
}

const postgresql = (url: string) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => servicePool(url)),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption("1 second"))
    )
    yield* Effect.tryPromise({
      try: () => pool.query("SELECT 1"),
      catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
    }).pipe(Effect.timeoutFail({
      duration: "5 seconds",
      onTimeout: () => new SqlError.SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
    }))
    const read: DirectRead = (text, values) => pool.query(text, [...values]).then((result) => result.rows)
    return Layer.mergeAll(
      PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "merchant-purchasing-service" }),
      // LISTEN on a connection of its own that fails when it is lost (Listen.ts)
      Layer.succeed(DbNotifications, { listen: listenOnOwnConnection(pool) }),
      Layer.succeed(DirectReads, Option.some(read)),
      Layer.succeed(DirectTransactions, Option.some(directTransaction(pool))),
      Layer.succeed(PgliteProtocol, Option.none())
    )
  }))

const client = Layer.unwrapEffect(Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isSome(settings.databaseUrl)) return postgresql(Redacted.value(settings.databaseUrl.value))
  const dir = join(settings.dataDir, "pg")
  // the embedded database holds keys' hashes and webhook secrets (PGlite writes its files 0666):
  // its directory is the owner's alone
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  chmodSync(dir, 0o700)
  return Layer.mergeAll(
    Layer.provideMerge(Pglite.layer(dir), Layer.scopedDiscard(lockDataDir(settings.dataDir))),
    Layer.succeed(DirectReads, Option.none()),
    Layer.succeed(DirectTransactions, Option.none())
  )
}))

const migrated = Layer.effectDiscard(migrate.pipe(
  Effect.tap((applied) => applied.length > 0 ? Effect.logInfo("migrations applied", applied.map(([id, name]) => `${id}_${name}`)) : Effect.void)
))

/**
 * SqlClient and PgClient, with every migration applied, and the pool's direct reads and
 * transactions (PostgreSQL) or the embedded database's raw statements (PGlite).
 */
export const DatabaseLive: Layer.Layer<
  SqlClient.SqlClient | PgClient.PgClient | DbNotifications | DirectReads | DirectTransactions | PgliteProtocol,
  unknown,
  Settings
> = Layer.provideMerge(migrated, client)
