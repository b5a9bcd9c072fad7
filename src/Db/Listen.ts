/**
 * LISTEN on PostgreSQL that fails when its connection is lost. @effect/sql-pg 0.53's `listen`
 * swallows its connection's errors: after a server restart or a killed backend the stream stays
 * open and silent forever, and nothing that waits for notifications (the catalogue tail, the
 * purchase worker, the auth cache) hears of another process again. Here each stream has its own
 * connection and fails with it, so the supervised fiber that runs it listens again.
 *
 * Every LISTEN stream (this one and PGlite's) first emits LISTENING, once the LISTEN is in force:
 * whatever changed before then went unheard, so a listener looks again (the tail reads the log,
 * the worker claims, the auth cache forgets). Real notifications never have an empty payload.
 */
import { SqlError } from "@effect/sql"
import { Effect, Stream } from "effect"
import pg from "pg"

/** The first element of every LISTEN stream: listening from now on (see above). */
export const LISTENING = ""

export const listenOnOwnConnection = (pool: pg.Pool) => (channel: string): Stream.Stream<string, SqlError.SqlError> =>
  Stream.asyncPush<string, SqlError.SqlError>((emit) =>
    Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const client = new pg.Client(pool.options)
          const lost = (cause: unknown) => emit.fail(new SqlError.SqlError({ cause, message: `LISTEN ${channel}: connection lost` }))
          client.on("error", lost)
          // (node-postgres's words for it: Db/ConnectionLoss.ts knows them)
          client.on("end", () => lost(new Error("Connection terminated")))
          client.on("notification", (message) => {
            if (message.channel === channel && message.payload) emit.single(message.payload)
          })
          try {
            await client.connect()
            await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
            emit.single(LISTENING)
          } catch (error) {
            client.removeAllListeners()
            // a failing socket must not throw unhandled while it closes
            client.on("error", () => {})
            await client.end().catch(() => undefined)
            throw error
          }
          return client
        },
        catch: (cause) => new SqlError.SqlError({ cause, message: `Failed to LISTEN ${channel}` })
      }),
      (client) =>
        Effect.promise(() => {
          client.removeAllListeners()
          // a failing socket must not throw unhandled while it closes
          client.on("error", () => {})
          return client.end().catch(() => undefined)
        }).pipe(Effect.timeoutOption("1 second"))
    )
  )
