/**
 * Deflation of the dump's pieces on worker threads, each with an input and an output buffer in
 * shared memory that are reused from piece to piece. Node's asynchronous zlib allocated the output
 * of every piece in the main heap: at 2.5M items that external memory set off dozens of full
 * collections of a heap of gigabytes per build. A worker also takes the piece's CRC-32 off the
 * event loop.
 */
import { Effect } from "effect"
import { Worker } from "node:worker_threads"

/**
 * The worker, in CommonJS run from this string (eval), so the bundle and the test runner need no
 * file of their own for it. It deflates the first `length` bytes of `input` into `output`, ending on
 * a sync flush (pieces join into one deflate stream), and reports their CRC-32. Requests queue in
 * its message port and run one after the other. memLevel 9 (zlib's default is 8): about 14 % faster
 * at level 1 on catalogue JSON, and a little smaller (bigger blocks, fewer Huffman trees to build).
 *
 * On Linux it lowers its own thread's priority (nice 10): the workers keep the cores busy for a
 * whole build, and the event loop, which needs little CPU meanwhile, should not wait for one.
 */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads")
const zlib = require("node:zlib")
try {
  const thread = Number(require("node:fs").readlinkSync("/proc/thread-self").split("/").pop())
  require("node:os").setPriority(thread, 10)
} catch {}
parentPort.on("message", ({ id, input, output, length, level }) => {
  try {
    const raw = Buffer.from(input, 0, length)
    const deflated = zlib.deflateRawSync(raw, { level, memLevel: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH, chunkSize: 1024 * 1024 })
    if (deflated.length > output.byteLength) throw new Error("a deflated piece is larger than its output buffer")
    Buffer.from(output).set(deflated)
    parentPort.postMessage({ id, crc: zlib.crc32(raw), size: deflated.length })
  } catch (error) {
    parentPort.postMessage({ id, error: String(error) })
  }
})`

/** Some JSON deflated on its own, ending on a sync flush, with its CRC-32 and length. */
export interface Piece {
  readonly deflated: Buffer
  readonly crc: number
  readonly length: number
}

export interface DeflateSlot {
  /** The slot's input, at least `bytes` long: a piece's JSON is written here. */
  readonly input: (bytes: number) => Buffer
  /**
   * Deflates the input's first `length` bytes. The piece's `deflated` is a view of the slot's
   * output: valid until the slot's next use.
   */
  readonly deflate: (length: number) => Effect.Effect<Piece, Error>
}

interface Reply {
  readonly id: number
  readonly crc?: number
  readonly size?: number
  readonly error?: string
}

interface Request {
  readonly id: number
  readonly input: SharedArrayBuffer
  readonly output: SharedArrayBuffer
  readonly length: number
  readonly level: number
}

/** A worker thread, started on first use and again after one died; replies matched to requests by id. */
const makeWorker = (running: Set<Worker>) => {
  let worker: Worker | undefined
  // A reply to an interrupted request (the worker still finishes it) has no waiter and is dropped.
  const waiting = new Map<number, (reply: Reply) => void>()
  const failAll = (error: string) => {
    const waiters = [...waiting.values()]
    waiting.clear()
    for (const resume of waiters) resume({ id: 0, error })
  }
  const workerOf = () => {
    if (worker !== undefined) return worker
    const started = new Worker(WORKER_SOURCE, { eval: true })
    // an idle worker does not keep the process alive
    started.unref()
    started.on("message", (reply: Reply) => {
      const resume = waiting.get(reply.id)
      waiting.delete(reply.id)
      resume?.(reply)
    })
    const gone = (error: string) => {
      running.delete(started)
      if (worker === started) worker = undefined
      failAll(error)
    }
    started.on("error", (error) => gone(`the worker failed: ${error.message}`))
    started.on("exit", (code) => gone(`the worker exited (${code})`))
    running.add(started)
    worker = started
    return started
  }
  /** Sends a request; `resume` gets its reply. Returns the canceller. */
  const send = (request: Request, resume: (reply: Reply) => void) => {
    waiting.set(request.id, resume)
    workerOf().postMessage(request)
    return () => waiting.delete(request.id)
  }
  return { send }
}

/** Room for the deflated bytes of `inputBytes`: deflate grows incompressible input by 5 bytes per 16 KiB at most. */
const outputBytesFor = (inputBytes: number) => inputBytes + (inputBytes >>> 3) + 65_536

let requests = 0

const makeSlot = (worker: ReturnType<typeof makeWorker>, level: number, initialBytes: number): DeflateSlot => {
  let input = new SharedArrayBuffer(initialBytes)
  let output = new SharedArrayBuffer(outputBytesFor(initialBytes))
  return {
    input: (bytes) => {
      if (input.byteLength < bytes) {
        input = new SharedArrayBuffer(bytes)
        output = new SharedArrayBuffer(outputBytesFor(bytes))
      }
      return Buffer.from(input)
    },
    deflate: (length) =>
      Effect.async<Piece, Error>((resume) => {
        const cancel = worker.send({ id: ++requests, input, output, length, level }, (reply) =>
          resume(
            reply.error !== undefined || reply.crc === undefined || reply.size === undefined
              ? Effect.fail(new Error(`deflating a dump piece: ${reply.error ?? "no result"}`))
              : Effect.succeed({ deflated: Buffer.from(output, 0, reply.size), crc: reply.crc, length })
          ))
        return Effect.sync(cancel)
      })
  }
}

/**
 * `slots` deflate slots served by `workers` worker threads in turn (slot i by worker i mod
 * workers), ended with the scope. A slot deflates one piece at a time; with more slots than
 * workers, a worker's next piece waits in its queue while the event loop writes out its last one.
 */
export const makeDeflateSlots = (options: { readonly slots: number; readonly workers: number; readonly level: number; readonly initialBytes: number }) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => new Set<Worker>()),
      (running) => Effect.promise(() => Promise.all([...running].map((worker) => worker.terminate())))
    ),
    (running): ReadonlyArray<DeflateSlot> => {
      const workers = Array.from({ length: options.workers }, () => makeWorker(running))
      return Array.from({ length: options.slots }, (_, i) => makeSlot(workers[i % workers.length]!, options.level, options.initialBytes))
    }
  )
