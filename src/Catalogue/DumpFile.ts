/**
 * The bytes of a built dump in a file under DATA_DIR/dump, not in the heap (hundreds of MB at a
 * million items). A replaced file is deleted once its last download has ended; the next build
 * reads the pieces it reuses from it before that.
 */
import { Effect } from "effect"
import { type FileHandle, mkdir, open, readdir, rm, unlink } from "node:fs/promises"
import { createReadStream } from "node:fs"
import { join } from "node:path"
import type { Readable } from "node:stream"

/** Bytes to write: ready in memory, or a range of an earlier dump file. */
export type Source = Buffer | { readonly from: DumpFile; readonly offset: number; readonly size: number }

export interface DumpFile {
  readonly size: number
  /** A stream of the whole file (call between `retain` and `release`). */
  readonly stream: () => Readable
  /** Keeps the file while a download reads it. */
  readonly retain: () => void
  readonly release: () => void
  /** The file is replaced: deleted once no download reads it. */
  readonly retire: () => void
  /** Bytes at an offset (a piece reused by the next build). */
  readonly read: (offset: number, size: number) => Promise<Buffer>
}

const fileOf = (path: string, handle: FileHandle, size: number): DumpFile => {
  let readers = 0
  let retired = false
  const deleteIfDone = () => {
    if (retired && readers === 0) unlink(path).catch(() => undefined)
  }
  return {
    size,
    // each download reads through its own descriptor
    stream: () => createReadStream(path),
    retain: () => { readers++ },
    release: () => {
      readers = Math.max(0, readers - 1)
      deleteIfDone()
    },
    retire: () => {
      retired = true
      handle.close().catch(() => undefined)
      deleteIfDone()
    },
    read: async (offset, length) => {
      const buffer = Buffer.allocUnsafe(length)
      const { bytesRead } = await handle.read(buffer, 0, length, offset)
      if (bytesRead !== length) throw new Error(`dump file ${path}: ${bytesRead} of ${length} bytes at ${offset}`)
      return buffer
    }
  }
}

/** Writes `sources` in order into a new file; returns it with each source's offset in it. */
export const writeDumpFile = (path: string, sources: ReadonlyArray<Source>) =>
  Effect.tryPromise({
    try: async () => {
      const handle = await open(path, "w+")
      try {
        const offsets: Array<number> = []
        let position = 0
        for (const source of sources) {
          const bytes = Buffer.isBuffer(source) ? source : await source.from.read(source.offset, source.size)
          offsets.push(position)
          await handle.write(bytes, 0, bytes.length, position)
          position += bytes.length
        }
        return { file: fileOf(path, handle, position), offsets }
      } catch (error) {
        await handle.close().catch(() => undefined)
        await unlink(path).catch(() => undefined)
        throw error
      }
    },
    catch: (error) => new Error(`writing the dump file ${path}: ${String(error)}`)
  })

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
