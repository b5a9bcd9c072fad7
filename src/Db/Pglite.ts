/**
 * An embedded PostgreSQL (PGlite) behind the same SqlClient/PgClient interface as a real server.
 * PGlite runs in a worker thread (PgliteWorker.ts) so its WebAssembly never holds up requests.
 * PGlite is one session, so every query, and every transaction as a whole, holds a single permit.
 * The pg compiler is reused, so SQL written for PostgreSQL runs unchanged.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Scope, Stream } from "effect"
import { cpSync, existsSync, readdirSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import { PgliteProtocol, type TextRows } from "./BinaryStatement.js"
import { LISTENING } from "./Listen.js"
import { DbNotifications } from "./Notifications.js"
import type { PgliteError, PgliteMessage, PgliteReply, PgliteRequest, PgliteWorkerData } from "./PgliteWorker.js"

const PgJson = Statement.custom<Statement.Custom<"PgJson", unknown>>("PgJson")
const fail = (message: string) => (cause: unknown) => new SqlError.SqlError({ cause, message })

type Request = PgliteRequest extends infer R ? R extends { readonly id: number } ? Omit<R, "id"> : never : never

/** An error with the PostgreSQL fields (code, constraint, detail...) back on it, as pg gives them. */
const errorFrom = (error: PgliteError) => Object.assign(new Error(error.message), error.fields)

/**
 * Starts the thread. Its module sits beside this one with the same extension: .mjs in the bundle
 * that `npm start` runs, .js in the tsc build, .ts when run from sources (tsx, vitest), where the
 * thread registers tsx first (`--import tsx` in a worker's execArgv does not reach its entry
 * module on Node 20).
 */
const startThread = (workerData: PgliteWorkerData) => {
  const here = import.meta.url
  const extension = here.slice(here.lastIndexOf("."))
  const file = new URL(`./PgliteWorker${extension}`, here)
  if (extension !== ".ts") return new Worker(file, { workerData })
  const tsx = pathToFileURL(createRequire(here).resolve("tsx/esm/api")).href
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(file.href)}) })`
  return new Worker(bootstrap, { eval: true, workerData })
}

/** The PGlite thread: requests by id, replies and notifications back. */
const openThread = (dataDir: string) =>
  new Promise<{
    readonly request: (request: Request, transfer?: ReadonlyArray<ArrayBuffer>) => Promise<PgliteReply>
    readonly listen: (channel: string, onPayload: (payload: string) => void) => Promise<number>
    readonly close: () => Promise<void>
  }>((resolve, reject) => {
    const worker = startThread({ dataDir })
    const pending = new Map<number, { resolve: (reply: PgliteReply) => void; reject: (cause: unknown) => void }>()
    const listeners = new Map<number, (payload: string) => void>()
    let nextId = 0
    let broken: Error | undefined
    // `transfer`: buffers handed to the thread instead of copied (the sender must not use them again)
    const send = (message: Request, transfer: ReadonlyArray<ArrayBuffer> = []) => {
      const id = ++nextId
      const reply = new Promise<PgliteReply>((resolve, reject) => {
        if (broken !== undefined) return reject(broken)
        pending.set(id, { resolve, reject })
        const sent: PgliteRequest = { ...message, id }
        worker.postMessage(sent, transfer)
      })
      return { id, reply }
    }
    const request = (message: Request, transfer?: ReadonlyArray<ArrayBuffer>) => send(message, transfer).reply
    const breakWith = (error: Error) => {
      broken = error
      for (const waiter of pending.values()) waiter.reject(error)
      pending.clear()
      reject(error)
    }
    worker.on("error", breakWith)
    worker.on("exit", (code) => breakWith(new Error(`PGlite thread exited (${code})`)))
    worker.on("message", (message: PgliteMessage) => {
      switch (message.type) {
        case "ready":
          return resolve({
            request,
            listen: (channel, onPayload) => {
              const { id, reply } = send({ op: "listen", channel })
              listeners.set(id, onPayload)
              return reply.then(() => id, (cause: unknown) => {
                listeners.delete(id)
                throw cause
              })
            },
            close: () => {
              const closed = request({ op: "close" })
              broken = new Error("PGlite: closed")
              return closed.then(() => worker.terminate()).then(() => undefined, () => undefined)
            }
          })
        case "failed":
          return breakWith(errorFrom(message.error))
        case "notification":
          return listeners.get(message.listener)?.(message.payload)
        case "reply":
        case "error": {
          const waiter = pending.get(message.id)
          pending.delete(message.id)
          if (message.type === "reply") waiter?.resolve(message)
          else waiter?.reject(errorFrom(message.error))
        }
      }
    })
  })

/**
 * A new database's files as initdb leaves them, made at build time beside the bundle
 * (scripts/pglite-initdb.mjs): copied into a new, empty data directory instead of running initdb
 * (about 2.5 s). False when there is none (run from sources) or the directory is not empty.
 */
const copiedFromTemplate = (dataDir: string) =>
  Effect.sync(() => {
    const template = fileURLToPath(new URL("../pglite-initdb", import.meta.url))
    if (!existsSync(`${template}/PG_VERSION`) || (existsSync(dataDir) && readdirSync(dataDir).length > 0)) return false
    cpSync(template, dataDir, { recursive: true })
    return true
  })

export const make = (dataDir: string) =>
  Effect.gen(function*() {
    // the open is most of a cold start (a new database: its files are created first); say so
    const created = !existsSync(`${dataDir}/PG_VERSION`)
    yield* Effect.logInfo(created ? "creating the embedded database" : "opening the embedded database").pipe(Effect.annotateLogs({ directory: dataDir }))
    const started = Date.now()
    if (created && !(yield* copiedFromTemplate(dataDir))) {
      // A new database's initdb grows PGlite's WebAssembly memory for good (several hundred MB
      // more resident than an open): it runs in a thread of its own that then ends, taking that
      // memory with it, and the database is opened afresh (once: about half a second more).
      const creating = yield* Effect.tryPromise({ try: () => openThread(dataDir), catch: fail("PGlite: failed to create") })
      yield* Effect.promise(() => creating.close())
    }
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => openThread(dataDir), catch: fail("PGlite: failed to open") }),
      (db) => Effect.promise(() => db.close())
    )
    yield* Effect.logInfo("embedded database open").pipe(Effect.annotateLogs({ millis: Date.now() - started }))
    const semaphore = yield* Effect.makeSemaphore(1)
    const lock = Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        restore(semaphore.take(1)),
        Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
      )
    )

    // Like node-postgres: no parameters means the simple protocol (multi-statement scripts work).
    const query = (sql: string, params: ReadonlyArray<unknown>, rowMode: "object" | "array") =>
      Effect.tryPromise({
        try: () =>
          params.length === 0 && rowMode === "object"
            ? db.request({ op: "exec", sql })
            : db.request({ op: "query", sql, params, rowMode }),
        catch: fail("Failed to execute statement")
      })
    const rowsOf = (sql: string, params: ReadonlyArray<unknown>) => Effect.map(query(sql, params, "object"), (reply) => reply.rows)

    const connection: SqlConnection.Connection = {
      execute: (sql, params, transformRows) => Effect.map(rowsOf(sql, params), (rows) => (transformRows ? transformRows(rows) : rows)),
      executeRaw: (sql, params) => query(sql, params, "object"),
      executeValues: (sql, params) => Effect.map(query(sql, params, "array"), (reply) => reply.values),
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
            Effect.tryPromise({
              try: () =>
                db.listen(channel, (payload) => {
                  if (payload) emit.single(payload)
                }),
              catch: fail("Failed to listen")
            }).pipe(Effect.tap(() => emit.single(LISTENING)))
          )),
          (listener) => Effect.promise(() => db.request({ op: "unlisten", listener }).catch(() => undefined))
        )
      )
    // A statement's messages as they are (BinaryStatement.ts), handed to the thread, not copied. In
    // a transaction of this client its permit is held already (the fiber's TransactionConnection);
    // outside one, a permit is taken.
    const protocol = (messages: Uint8Array) => {
      // a buffer handed over already is empty here: sent again, PGlite would wait for its messages
      if (messages.byteLength === 0) return Effect.fail(new SqlError.SqlError({ cause: messages, message: "PGlite: no messages (sent already?)" }))
      const send = Effect.tryPromise({
        try: () => db.request({ op: "protocol", messages }, messages.buffer instanceof ArrayBuffer ? [messages.buffer] : []),
        catch: fail("Failed to execute statement")
      }).pipe(
        Effect.map((reply): TextRows => reply.values.map((row) => row.map((field) => typeof field === "string" ? field : null)))
      )
      return Effect.flatMap(
        Effect.serviceOption(SqlClient.TransactionConnection),
        (transaction) => Option.isSome(transaction) ? send : Effect.scoped(Effect.zipRight(lock, send))
      )
    }
    const pg: PgClient.PgClient = Object.assign(client, {
      [PgClient.TypeId]: PgClient.TypeId as typeof PgClient.TypeId,
      config: { database: dataDir },
      json: (value: unknown) => PgJson(value),
      listen,
      notify: (channel: string, payload: string) => client`SELECT pg_notify(${channel}, ${payload})`.pipe(Effect.asVoid)
    })
    return { pg, protocol, listen }
  })

export const layer = (dataDir: string) =>
  Layer.scopedContext(
    Effect.map(make(dataDir), ({ listen, pg, protocol }) =>
      Context.make(PgClient.PgClient, pg).pipe(
        Context.add(SqlClient.SqlClient, pg),
        Context.add(PgliteProtocol, Option.some(protocol)),
        Context.add(DbNotifications, { listen })
      ))
  ).pipe(Layer.provide(Reactivity.layer))
