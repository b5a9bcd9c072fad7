/**
 * The threads that compute password hashes: scrypt runs in worker threads of its own, one hash at a
 * time each, at a lower CPU priority (nice 10) than the rest of the process. Not in libuv's pool,
 * which file reads, zlib and DNS share (four threads: a burst of sign-ins took them all), and not
 * at the API's priority: on a busy host the API's requests run first and hashing takes what is
 * left. A thread starts at its first hash (most processes never hash) and lives with the service.
 */
import { Effect, Queue } from "effect"
import { Worker } from "node:worker_threads"

/** One hash's inputs: scrypt's (RFC 7914) with OpenSSL's memory cap. */
export interface ScryptJob {
  readonly password: string
  readonly salt: Buffer
  readonly cost: number
  readonly block: number
  readonly parallel: number
  readonly keyBytes: number
  readonly maxmem: number
}

/**
 * The thread's program. On Linux a thread's nice value is its own (setpriority of the calling
 * thread), so this lowers the hashing thread only; where it cannot, the thread hashes as it is.
 */
const THREAD_SOURCE = `
const { parentPort } = require("node:worker_threads")
const { scryptSync } = require("node:crypto")
try { require("node:os").setPriority(10) } catch {}
parentPort.on("message", (job) => {
  try {
    const key = scryptSync(job.password, job.salt, job.keyBytes, { N: job.cost, r: job.block, p: job.parallel, maxmem: job.maxmem })
    parentPort.postMessage({ key })
  } catch (error) {
    parentPort.postMessage({ error: String(error) })
  }
})
`

interface Reply {
  readonly key?: Uint8Array
  readonly error?: string
}

/** A thread's place in the pool: its worker once started (again after it died). */
interface Slot {
  worker: Worker | undefined
}

/**
 * `count` hashing threads for the caller's scope (ended with it). `derive` waits for a free thread;
 * once a hash is sent it runs to its end whatever becomes of the caller (uninterruptible), so a
 * thread never has two at once.
 */
export const makeHashThreads = (count: number) =>
  Effect.gen(function*() {
    const free = yield* Queue.bounded<Slot>(count)
    const slots: Array<Slot> = Array.from({ length: count }, () => ({ worker: undefined }))
    yield* Queue.offerAll(free, slots)
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(slots.map((slot) => slot.worker?.terminate()))))

    const start = (slot: Slot) => {
      const worker = new Worker(THREAD_SOURCE, { eval: true, name: "password-hash" })
      // a thread waiting for work keeps nothing alive: the scope ends it
      worker.unref()
      slot.worker = worker
      return worker
    }

    const run = (slot: Slot, job: ScryptJob) =>
      Effect.uninterruptible(Effect.async<Buffer>((resume) => {
        const worker = slot.worker ?? start(slot)
        const settle = (outcome: Effect.Effect<Buffer>) => {
          worker.off("message", onMessage)
          worker.off("error", onError)
          worker.off("exit", onExit)
          resume(outcome)
        }
        const onMessage = (reply: Reply) =>
          settle(reply.key !== undefined ? Effect.succeed(Buffer.from(reply.key)) : Effect.die(new Error(`scrypt failed: ${reply.error}`)))
        // a thread that died is started anew at the next hash
        const onError = (error: Error) => {
          slot.worker = undefined
          settle(Effect.die(error))
        }
        const onExit = (code: number) => {
          slot.worker = undefined
          settle(Effect.die(new Error(`the password hashing thread exited (${code})`)))
        }
        worker.on("message", onMessage)
        worker.once("error", onError)
        worker.once("exit", onExit)
        worker.postMessage(job)
      }))

    /** scrypt of `job` in a free hashing thread (waiting for one). */
    const derive = (job: ScryptJob): Effect.Effect<Buffer> =>
      Effect.acquireUseRelease(Queue.take(free), (slot) => run(slot, job), (slot) => Queue.offer(free, slot))

    return { derive } as const
  })
