/**
 * The embedded PGlite database in its own thread. PGlite is PostgreSQL compiled to WebAssembly:
 * opening it and running its queries is CPU work, which on the service's thread would hold up
 * every request (start-up most of all: about half a second to open). Here it runs on the other
 * core, and Pglite.ts talks to it with the messages below. One PGlite is one session; Pglite.ts
 * keeps transactions whole with its own lock.
 */
import { messages as protocolMessages, PGlite } from "@electric-sql/pglite"
import { setFlagsFromString } from "node:v8"
import { parentPort, workerData } from "node:worker_threads"

export type PgliteRequest =
  | { readonly op: "query"; readonly id: number; readonly sql: string; readonly params: ReadonlyArray<unknown>; readonly rowMode: "object" | "array" }
  | { readonly op: "exec"; readonly id: number; readonly sql: string }
  /** Extended-protocol messages as they are (BinaryStatement.ts); the rows come back as `values`. */
  | { readonly op: "protocol"; readonly id: number; readonly messages: Uint8Array }
  | { readonly op: "listen"; readonly id: number; readonly channel: string }
  | { readonly op: "unlisten"; readonly id: number; readonly listener: number }
  | { readonly op: "close"; readonly id: number }

/** A PostgreSQL error's fields (code, constraint, detail...), which structured cloning would drop. */
export type PgliteError = { readonly message: string; readonly fields: Readonly<Record<string, string | number>> }

export type PgliteMessage =
  | { readonly type: "ready" }
  | { readonly type: "failed"; readonly error: PgliteError }
  | ({ readonly type: "reply"; readonly id: number } & PgliteReply)
  | { readonly type: "error"; readonly id: number; readonly error: PgliteError }
  | { readonly type: "notification"; readonly listener: number; readonly payload: string }

/** Rows as objects, or as arrays of values (rowMode "array", then `rows` is empty). */
export type PgliteReply = {
  readonly rows: ReadonlyArray<Record<string, unknown>>
  readonly values: ReadonlyArray<ReadonlyArray<unknown>>
  readonly affectedRows: number
}

export type PgliteWorkerData = { readonly dataDir: string }

const errorOf = (cause: unknown): PgliteError => {
  const fields: Record<string, string | number> = {}
  if (typeof cause === "object" && cause !== null) {
    for (const [key, value] of Object.entries(cause)) {
      if (typeof value === "string" || typeof value === "number") fields[key] = value
    }
  }
  return { message: cause instanceof Error ? cause.message : String(cause), fields }
}

/** PostgreSQL's settings in PGlite, besides PGlite's own (`PGlite.defaultStartParams`). */
const SETTINGS = [
  // The buffer cache, inside PGlite's WebAssembly memory, which only grows: 128 MB by default, most
  // of the process's resident memory on a small catalogue. The embedded database's working set
  // (balances, purchases, the outbox) is small, the catalogue is read once into the engine's
  // index, and pages beyond the cache come from the operating system's file cache.
  "shared_buffers=32MB",
  // The write-ahead log's buffers, for a first reconciliation's pages (2.4 MB of log a page of
  // 1,000 items). They default to a 32nd of the cache, 1 MB: a page's log overflowed them, and
  // PostgreSQL wrote it out 8 KB at a time (30,000 writes at 100,000 items, each a call from the
  // WebAssembly to node's file system); in 4 MB a page's log is written at its commit, in one write.
  "wal_buffers=4MB",
  // A new log segment is not filled with zeros first: PGlite runs without fsync (its `-F`), so the
  // zeros bought no safety, and they were a write of 16 MB for each 16 MB of log.
  "wal_init_zero=off"
]

const nothing: PgliteReply = { rows: [], values: [], affectedRows: 0 }

const serve = async (port: NonNullable<typeof parentPort>, dataDir: string) => {
  const post = (message: PgliteMessage) => port.postMessage(message)
  // PostgreSQL's WebAssembly stays on V8's baseline compiler (Liftoff). With tier-up, V8 recompiles
  // its hot functions with TurboFan during the first seconds and the thread waits for that: opening
  // took 0.5 s and the first query 0.2 s more; with Liftoff only, 0.3 s and 10 ms, for queries
  // about 1.5x slower once warm (README, Decisions). V8 flags are process-wide, but nothing else
  // in the service runs WebAssembly.
  setFlagsFromString("--liftoff-only")
  let db: PGlite
  try {
    // int8 and numeric as strings, like node-postgres, so both engines hand the decoders the same types
    db = await PGlite.create(dataDir, {
      parsers: { 20: (x: string) => x, 1700: (x: string) => x },
      startParams: [...PGlite.defaultStartParams, ...SETTINGS.flatMap((setting) => ["-c", setting])]
    })
  } catch (cause) {
    post({ type: "failed", error: errorOf(cause) })
    return
  }
  const listeners = new Map<number, () => Promise<void>>()
  const handle = async (request: PgliteRequest): Promise<PgliteMessage> => {
    switch (request.op) {
      case "query": {
        if (request.rowMode === "array") {
          const result = await db.query<Array<unknown>>(request.sql, [...request.params], { rowMode: "array" })
          return { type: "reply", id: request.id, rows: [], values: result.rows, affectedRows: result.affectedRows ?? 0 }
        }
        const result = await db.query<Record<string, unknown>>(request.sql, [...request.params])
        return { type: "reply", id: request.id, rows: result.rows, values: [], affectedRows: result.affectedRows ?? 0 }
      }
      case "exec": {
        // no parameters: the simple protocol, so multi-statement scripts run; the last result counts
        const results = await db.exec(request.sql)
        const last = results[results.length - 1]
        return { type: "reply", id: request.id, rows: last?.rows ?? [], values: [], affectedRows: last?.affectedRows ?? 0 }
      }
      case "protocol": {
        // under PGlite's own lock, as its queries take it; its error (a DatabaseError) is thrown
        // once every message has run, so the session has reached the Sync whatever failed
        const messages = await db.runExclusive(() => db.execProtocolStream(request.messages, { syncToFs: false }))
        const values = messages.flatMap((message) => message instanceof protocolMessages.DataRowMessage ? [message.fields] : [])
        return { type: "reply", id: request.id, rows: [], values, affectedRows: 0 }
      }
      case "listen": {
        const unlisten = await db.listen(request.channel, (payload) => post({ type: "notification", listener: request.id, payload }))
        listeners.set(request.id, unlisten)
        return { type: "reply", id: request.id, ...nothing }
      }
      case "unlisten": {
        await listeners.get(request.listener)?.()
        listeners.delete(request.listener)
        return { type: "reply", id: request.id, ...nothing }
      }
      case "close": {
        await db.close()
        return { type: "reply", id: request.id, ...nothing }
      }
    }
  }
  port.on("message", (request: PgliteRequest) => {
    handle(request).then(post, (cause: unknown) => post({ type: "error", id: request.id, error: errorOf(cause) }))
  })
  post({ type: "ready" })
}

const dataDirOf = (data: unknown): string | undefined =>
  typeof data === "object" && data !== null && "dataDir" in data && typeof data.dataDir === "string" ? data.dataDir : undefined

const dataDir = dataDirOf(workerData)
if (parentPort !== null && dataDir !== undefined) void serve(parentPort, dataDir)
