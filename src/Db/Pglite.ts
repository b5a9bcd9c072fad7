/**
 * An embedded PostgreSQL (PGlite) behind the same SqlClient/PgClient interface as a real server.
 * PGlite is one session, so every query, and every transaction as a whole, holds a single permit.
 * The pg compiler is reused, so SQL written for PostgreSQL runs unchanged.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError, Statement, type SqlConnection } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { PGlite, type Results } from "@electric-sql/pglite"
import { Context, Effect, Layer, Scope, Stream } from "effect"

const PgJson = Statement.custom<Statement.Custom<"PgJson", unknown>>("PgJson")
const fail = (message: string) => (cause: unknown) => new SqlError.SqlError({ cause, message })

type Row = Record<string, unknown>

export const make = (dataDir: string) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        // int8 as string, like node-postgres, so both engines hand the same types to the decoders
        try: () => PGlite.create(dataDir, { parsers: { 20: (x: string) => x, 1700: (x: string) => x } }),
        catch: fail("PGlite: failed to open")
      }),
      (db) => Effect.promise(() => db.close())
    )
    const semaphore = yield* Effect.makeSemaphore(1)
    const lock = Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        restore(semaphore.take(1)),
        Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
      )
    )

    // Like node-postgres: no parameters means the simple protocol (multi-statement scripts work).
    const query = (sql: string, params: ReadonlyArray<unknown>) =>
      params.length === 0
        ? Effect.tryPromise({ try: () => db.exec(sql), catch: fail("Failed to execute statement") }).pipe(
          Effect.map((results): Results<Row> => results[results.length - 1] as Results<Row> ?? { rows: [], fields: [] })
        )
        : Effect.tryPromise({
          try: () => db.query<Row>(sql, [...params]),
          catch: fail("Failed to execute statement")
        })
    const queryValues = (sql: string, params: ReadonlyArray<unknown>) =>
      Effect.tryPromise({
        try: () => db.query<Array<unknown>>(sql, [...params], { rowMode: "array" }),
        catch: fail("Failed to execute statement")
      })

    const connection: SqlConnection.Connection = {
      execute: (sql, params, transformRows) =>
        Effect.map(query(sql, params), (r) => (transformRows ? transformRows(r.rows) : r.rows)),
      executeRaw: (sql, params) => query(sql, params),
      executeValues: (sql, params) => Effect.map(queryValues(sql, params), (r) => r.rows),
      executeUnprepared: (sql, params, transformRows) => connection.execute(sql, params, transformRows),
      executeStream: (sql, params, transformRows) => Stream.fromIterableEffect(connection.execute(sql, params, transformRows))
    }
    const acquirer = Effect.as(lock, connection)
    const client = yield* SqlClient.make({
      acquirer,
      transactionAcquirer: acquirer,
      compiler: PgClient.makeCompiler(),
      spanAttributes: [["db.system.name", "postgresql"]]
    })
    const listen = (channel: string): Stream.Stream<string, SqlError.SqlError> =>
      Stream.asyncPush<string, SqlError.SqlError>((emit) =>
        Effect.acquireRelease(
          Effect.scoped(Effect.zipRight(
            lock,
            Effect.tryPromise({ try: () => db.listen(channel, (payload) => emit.single(payload)), catch: fail("Failed to listen") })
          )),
          (unlisten) => Effect.promise(() => unlisten())
        )
      )
    const pg: PgClient.PgClient = Object.assign(client, {
      [PgClient.TypeId]: PgClient.TypeId as typeof PgClient.TypeId,
      config: { database: dataDir },
      json: (value: unknown) => PgJson(value),
      listen,
      notify: (channel: string, payload: string) => client`SELECT pg_notify(${channel}, ${payload})`.pipe(Effect.asVoid)
    })
    return pg
  })

export const layer = (dataDir: string) =>
  Layer.scopedContext(
    Effect.map(make(dataDir), (pg) => Context.make(PgClient.PgClient, pg).pipe(Context.add(SqlClient.SqlClient, pg)))
  ).pipe(Layer.provide(Reactivity.layer))
