/**
 * A lost database connection (src/Db/ConnectionLoss.ts, the pool of src/Db/Database.ts, LISTEN of
 * src/Db/Listen.ts): told apart from other failures on real errors, and, on a real PostgreSQL server
 * reached through a proxy that cuts every connection (DATABASE_URL only), a break of a connection
 * that is checked out never ends the process: its holder's statements fail with an error that says
 * so, and the next ones run on a new connection.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Cause, Chunk, Effect, Exit, FiberId, Layer, Stream } from "effect"
import pg from "pg"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { isConnectionLoss, isConnectionLossCause } from "../../src/Db/ConnectionLoss.js"
import { directTransaction, servicePool } from "../../src/Db/Database.js"
import { LISTENING, listenOnOwnConnection } from "../../src/Db/Listen.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js"
import { freePort } from "../support/server.js"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The error of connecting to a port nobody listens on. */
const refusedConnection = async () => {
  const client = new pg.Client({ host: "127.0.0.1", port: await freePort(), user: "nobody", connectionTimeoutMillis: 5_000 })
  client.on("error", () => undefined)
  return client.connect().then(() => undefined, (error: unknown) => error)
}

describe("a lost database connection, told apart", () => {
  it("a refused connection, node-postgres's words for an ended one, and the server's shutdown codes are; SQL errors are not", async () => {
    const refused = await refusedConnection()
    expect(refused).toBeInstanceOf(Error)
    expect(isConnectionLoss(refused)).toBe(true)
    // wrapped as the service's layers wrap it
    expect(isConnectionLoss(new SqlError.SqlError({ cause: refused, message: "Failed to acquire connection" }))).toBe(true)
    expect(isConnectionLoss(new Cause.UnknownException(new SqlError.SqlError({ cause: refused, message: "x" })))).toBe(true)
    expect(isConnectionLoss(new AggregateError([refused]))).toBe(true)
    expect(isConnectionLoss(new Error("Connection terminated unexpectedly"))).toBe(true)
    expect(isConnectionLoss(new Error("Client has encountered a connection error and is not queryable"))).toBe(true)
    expect(isConnectionLoss(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }))).toBe(true)
    expect(isConnectionLoss(Object.assign(new Error("the database system is starting up"), { code: "57P03" }))).toBe(true)

    expect(isConnectionLoss(Object.assign(new Error("syntax error at or near \"SELEC\""), { code: "42601" }))).toBe(false)
    expect(isConnectionLoss(Object.assign(new Error("duplicate key value"), { code: "23505" }))).toBe(false)
    expect(isConnectionLoss(new SqlError.SqlError({ cause: new Error("boom"), message: "Failed to execute statement" }))).toBe(false)
    expect(isConnectionLoss("Connection terminated")).toBe(false)
    expect(isConnectionLoss(undefined)).toBe(false)
  })

  it("a Cause is one when each of its failures and defects is", async () => {
    const lost = new SqlError.SqlError({ cause: await refusedConnection(), message: "LISTEN x: connection lost" })
    expect(isConnectionLossCause(Cause.fail(lost))).toBe(true)
    expect(isConnectionLossCause(Cause.die(lost))).toBe(true)
    expect(isConnectionLossCause(Cause.parallel(Cause.fail(lost), Cause.die(lost)))).toBe(true)
    expect(isConnectionLossCause(Cause.sequential(Cause.fail(lost), Cause.die(new Error("a bug"))))).toBe(false)
    expect(isConnectionLossCause(Cause.fail("boom"))).toBe(false)
    expect(isConnectionLossCause(Cause.interrupt(FiberId.none))).toBe(false)
  })
})

describe.runIf(!!process.env["DATABASE_URL"])("connections cut while checked out (DATABASE_URL only)", () => {
  let database: FreshDatabase
  let proxy: PgProxy
  let pool: pg.Pool
  const uncaught: Array<unknown> = []
  const onUncaught = (error: unknown) => uncaught.push(error)

  beforeAll(async () => {
    database = await freshDatabase()
    const server = new URL(process.env["DATABASE_URL"]!)
    proxy = await startPgProxy({ host: server.hostname, port: Number(server.port || 5432) })
    pool = servicePool(proxy.urlFor(database.url!))
    // an 'error' event nobody listens to is thrown from the socket's callback: here it is counted
    process.on("uncaughtException", onUncaught)
  })
  afterEach(() => {
    proxy.accept()
    expect(uncaught.splice(0)).toEqual([])
  })
  afterAll(async () => {
    process.off("uncaughtException", onUncaught)
    await pool?.end()
    await proxy?.close()
    await database?.drop()
  })

  /** Runs `effect` with SqlClient and PgClient over the service's pool. */
  const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
    Effect.runPromiseExit(effect.pipe(
      Effect.provide(PgClient.layerFromPool({ acquire: Effect.succeed(pool) }).pipe(Layer.provide(Reactivity.layer)))
    ))

  it("a direct transaction whose client is cut between statements fails with a lost connection; the next one runs", async () => {
    const transaction = directTransaction(pool)
    const failed = await transaction(async (session) => {
      expect(await session.queries([["SELECT 1 AS one", []]])).toEqual([[{ one: 1 }]])
      // the client is checked out, no statement in flight, when its connection is cut
      expect(proxy.cut()).toBeGreaterThan(0)
      await sleep(200)
      return session.queriesAndCommit([["SELECT 2 AS two", []]])
    }).then(() => undefined, (error: unknown) => error)
    expect(isConnectionLoss(failed)).toBe(true)
    expect(await transaction((session) => session.queriesAndCommit([["SELECT 3 AS three", []]]))).toEqual([[{ three: 3 }]])
  })

  it("a client the server terminates (a failover) while it is checked out fails its holder with a lost connection", async () => {
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    try {
      const transaction = directTransaction(pool)
      const failed = await transaction(async (session) => {
        const [[row]] = (await session.queries([["SELECT pg_backend_pid() AS pid", []]]))! as [[{ pid: number }]]
        await admin.query("SELECT pg_terminate_backend($1)", [row.pid])
        await sleep(200)
        return session.queriesAndCommit([["SELECT 1", []]])
      }).then(() => undefined, (error: unknown) => error)
      expect(isConnectionLoss(failed)).toBe(true)
      expect(await transaction((session) => session.queriesAndCommit([["SELECT 1 AS one", []]]))).toEqual([[{ one: 1 }]])
    } finally {
      await admin.end()
    }
  })

  it("an @effect/sql transaction cut midway fails with a lost connection; the next statement runs", async () => {
    const exit = await withSql(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT 1`
        proxy.cut()
        yield* Effect.sleep("200 millis")
        return yield* sql`SELECT 2`
      }))
    }))
    expect(Exit.isFailure(exit) && isConnectionLossCause(exit.cause)).toBe(true)
    const next = await withSql(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ one: number }>`SELECT 1 AS one`))
    expect(next).toEqual(Exit.succeed([{ one: 1 }]))
  })

  it("a LISTEN fails with a lost connection when cut, and while connections are refused; then listens again", async () => {
    const listen = listenOnOwnConnection(pool)
    const cutOff = await Effect.runPromiseExit(Stream.runCollect(
      listen("outage_test").pipe(
        Stream.tap((element) => Effect.sync(() => element === LISTENING && proxy.cut()))
      )
    ))
    expect(Exit.isFailure(cutOff) && isConnectionLossCause(cutOff.cause)).toBe(true)
    proxy.refuse()
    const refused = await Effect.runPromiseExit(Stream.runCollect(listen("outage_test")))
    expect(Exit.isFailure(refused) && isConnectionLossCause(refused.cause)).toBe(true)
    proxy.accept()
    const again = await Effect.runPromise(Stream.runCollect(Stream.take(listen("outage_test"), 1)))
    expect(Chunk.toReadonlyArray(again)).toEqual([LISTENING])
  })
})
