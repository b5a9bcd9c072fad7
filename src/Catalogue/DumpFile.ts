/**
 * The bytes of a built dump in a file under DATA_DIR/dump, not in the heap (hundreds of MB at a
 * million items). A retired file is deleted once its last download has ended; until it is
 * retired, the next build reads the pieces it reuses from it.
 */
import { Effect } from "effect"
import { createReadStream } from "node:fs"
import { type FileHandle, mkdir, open, readdir, rm, unlink } from "node:fs/promises"
import { join } from "node:path"
import type { Readable } from "node:stream"

/** The reads of a download. */
const READ_CHUNK_BYTES = 1024 * 1024

/** Bytes to write: ready in memory, or a range of an earlier dump file. */
export type Source = Buffer | { readonly from: DumpFile; readonly offset: number; readonly size: number }

export interface DumpFile {
  /** A stream of the whole file (call between `retain` and `release`). */
  readonly stream: () => Readable
  /** Keeps the file while a download reads it. */
  readonly retain: () => void
  readonly release: () => void
  /** The file is replaced: deleted once no download reads it. */
  readonly retire: () => void
  /** Reads `size` bytes at `offset` into the start of `into` (a piece reused by the next build). */
  readonly read: (into: Buffer, offset: number, size: number) => Promise<void>
}

const fileOf = (path: string, handle: FileHandle): DumpFile => {
  let readers = 0
  let retired = false
  const deleteIfDone = () => {
    if (retired && readers === 0) unlink(path).catch(() => undefined)
  }
  return {
    // each download reads through its own descriptor, in large reads (at 64 KB, a 25 MB dump
    // was 400 chunks, and the per-chunk work cost more CPU than the bytes' copy)
    stream: () => createReadStream(path, { highWaterMark: READ_CHUNK_BYTES }),
    retain: () => {
      readers++
    },
    release: () => {
      readers = Math.max(0, readers - 1)
      deleteIfDone()
    },
    retire: () => {
      retired = true
      handle.close().catch(() => undefined)
      deleteIfDone()
    },
    read: async (into, offset, length) => {
      const { bytesRead } = await handle.read(into, 0, length, offset)
      if (bytesRead !== length) throw new Error(`dump file ${path}: ${bytesRead} of ${length} bytes at ${offset}`)
    }
  }
}

/**
 * A new dump file, written in order: `append` writes bytes (or copies a range of an earlier file)
 * at the end and says where they went. One append at a time: the caller waits for each.
 */
export const openDumpFile = (path: string) =>
  Effect.map(
    Effect.tryPromise({ try: () => open(path, "w+"), catch: (error) => new Error(`opening the dump file ${path}: ${String(error)}`) }),
    (handle) => {
      const file = fileOf(path, handle)
      let position = 0
      // ranges copied from an earlier file pass through one reused buffer (appends run one at a time)
      let scratch = Buffer.alloc(0)
      const bytesOf = async (source: Source) => {
        if (Buffer.isBuffer(source)) return source
        if (scratch.length < source.size) scratch = Buffer.allocUnsafeSlow(Math.max(source.size, 2 * scratch.length))
        await source.from.read(scratch, source.offset, source.size)
        return scratch.subarray(0, source.size)
      }
      const append = (source: Source) =>
        Effect.tryPromise({
          try: async () => {
            const bytes = await bytesOf(source)
            await handle.write(bytes, 0, bytes.length, position)
            const placed = { offset: position, size: bytes.length }
            position += bytes.length
            return placed
          },
          catch: (error) => new Error(`writing the dump file ${path}: ${String(error)}`)
        })
      /** The whole file, in memory (once it is written). */
      const readAll = Effect.tryPromise({
        try: async () => {
          const bytes = Buffer.allocUnsafeSlow(position)
          await file.read(bytes, 0, position)
          return bytes
        },
        catch: (error) => new Error(`reading the dump file ${path}: ${String(error)}`)
      })
      return { file, append, size: () => position, readAll }
    }
  )

/**
 * This process's directory for dump files, emptied at start and removed at the end. Directories
 * of processes that no longer run (a crash) are removed too.
 */
export const dumpDirectory = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const root = join(dataDir, "dump")
      await mkdir(root, { recursive: true })
      for (const name of await readdir(root)) {
        const pid = Number(name.split("-")[0])
        if (Number.isInteger(pid) && pid !== process.pid && !isRunning(pid)) await rm(join(root, name), { recursive: true, force: true })
      }
      const dir = join(root, `${process.pid}-${Date.now()}`)
      await mkdir(dir, { recursive: true })
      return dir
    }),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  )

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user
    return error instanceof Error && "code" in error && error.code === "EPERM"
  }
}
