/**
 * The embedded database is for one process: a second one on the same DATA_DIR would run on its own
 * copy of the pages and one's writes would be lost. The first process holds `DATA_DIR/pg.lock`
 * while it runs; another start on the same directory stops with a message.
 *
 * The lock names its holder: its pid, the machine's boot and the process's start time (Linux,
 * from /proc) and a random nonce. A lock is stale, and taken over, when its holder no longer runs:
 * no process has its pid; the pid is ours (a container's restart); or, on Linux, the process has
 * ended and waits for its parent (a zombie), or the pid now belongs to another process (another
 * boot, or another start time: a pid reused). Where a live
 * pid cannot be told apart from the holder (no /proc, or a lock of an older version, its pid
 * only), it is taken to be the holder: refusing to start is the safe mistake, taking over a live
 * holder's directory is not. The message then says which file to remove.
 *
 * Creating and taking over are exclusive, so processes starting at once never both run: a lock is
 * created by link(2), which fails when one exists and gives the file its whole content at once; a
 * stale lock is replaced by rename(2), so the file is never missing, and only by the process that
 * created that lock's takeover mark (`pg.lock.<key>`, claimed the same way).
 */
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { linkSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { basename, dirname, join } from "node:path"

/** A lock's holder as its file names it; `pid` undefined for a file that names none. */
interface Holder {
  readonly pid: number | undefined
  readonly boot: string | undefined
  readonly started: string | undefined
}

const readText = (path: string) => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

/** This boot of the machine (Linux), so that a lock from before a reboot is known as such. */
const bootId = () => readText("/proc/sys/kernel/random/boot_id")?.trim()

/**
 * The process of `pid` (Linux: /proc/<pid>/stat): its state (3rd field; Z, a zombie, has ended) and
 * when it started, in clock ticks since boot (22nd field).
 */
const processOf = (pid: number) => {
  const stat = readText(`/proc/${pid}/stat`)
  if (stat === undefined) return undefined
  // the command name (2nd field) may hold spaces and parentheses: fields are counted after its ")"
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return { state: fields[0], started: fields[19] }
}

const stringField = (record: object, key: string) => {
  const value: unknown = Reflect.get(record, key)
  return typeof value === "string" ? value : undefined
}

/** A lock's content: a JSON record, or (an older version's) a pid alone. */
const holderOf = (content: string): Holder => {
  const text = content.trim()
  if (/^\d+$/.test(text)) return { pid: Number(text), boot: undefined, started: undefined }
  try {
    const record: unknown = JSON.parse(text)
    if (typeof record === "object" && record !== null) {
      const pid: unknown = Reflect.get(record, "pid")
      return {
        pid: typeof pid === "number" && Number.isInteger(pid) && pid > 0 ? pid : undefined,
        boot: stringField(record, "boot"),
        started: stringField(record, "started")
      }
    }
  } catch {
    // not a record: it names no process (a write cut short)
  }
  return { pid: undefined, boot: undefined, started: undefined }
}

const pidExists = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // it exists, but is not ours to signal
    return error instanceof Error && "code" in error && error.code === "EPERM"
  }
}

/** "stale": the holder is gone; "running": it runs; "pid-taken": a process has its pid, which may or may not be the holder. */
const stateOf = (holder: Holder): "stale" | "running" | "pid-taken" => {
  if (holder.pid === undefined || holder.pid === process.pid || !pidExists(holder.pid)) return "stale"
  const boot = bootId()
  if (holder.boot !== undefined && boot !== undefined && holder.boot !== boot) return "stale"
  const found = processOf(holder.pid)
  // ended, but not yet waited for by its parent: signals still reach a zombie
  if (found?.state === "Z" || found?.state === "X") return "stale"
  if (holder.started === undefined || found?.started === undefined) return "pid-taken"
  return holder.started === found.started ? "running" : "stale"
}

class InUse extends Error {}

const inUse = (dataDir: string, lock: string, holder: Holder, state: "running" | "pid-taken") =>
  new InUse(
    `DATA_DIR ${dataDir} is in use by another process (pid ${holder.pid}): the embedded database is for one process; ` +
      "stop it, or give each process its own DATA_DIR, or run several on one PostgreSQL with DATABASE_URL" +
      (state === "pid-taken" ? `; if pid ${holder.pid} is not a service on this DATA_DIR (its pid reused after a restart), remove ${lock}` : "")
  )

/**
 * Makes `path` name this process (`record`): created when there is none, or taken over when its
 * holder no longer runs. Throws InUse when a running process holds it, or is taking it over.
 */
const claim = (dataDir: string, lock: string, path: string, record: string, depth: number): void => {
  const fresh = `${path}.${randomBytes(8).toString("hex")}.new`
  writeFileSync(fresh, record, { flag: "wx", mode: 0o600 })
  try {
    for (let attempt = 1;; attempt++) {
      try {
        linkSync(fresh, path)
        return
      } catch (error) {
        if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error
      }
      // others keep taking it over, or takeovers of takeovers were cut short: a person should look
      if (attempt > 5 || depth > 3) throw new InUse(`DATA_DIR ${dataDir}: could not take over the stale ${lock}; remove it and start again`)
      const found = readText(path)
      // released meanwhile: create it again
      if (found === undefined) continue
      const holder = holderOf(found)
      const state = stateOf(holder)
      if (state !== "stale") throw inUse(dataDir, lock, holder, state)
      // one process takes this lock over: the one that claims its mark
      const mark = `${path}.${createHash("sha256").update(found).digest("hex").slice(0, 16)}`
      claim(dataDir, lock, mark, record, depth + 1)
      try {
        if (readText(path) === found) {
          renameSync(fresh, path)
          return
        }
      } finally {
        rmSync(mark, { force: true })
      }
    }
  } finally {
    rmSync(fresh, { force: true })
  }
}

/** Marks and new files of `lock` that processes no longer running left behind (killed while taking over). */
const removeLeftovers = (lock: string) => {
  const prefix = `${basename(lock)}.`
  for (const name of readdirSync(dirname(lock))) {
    if (!name.startsWith(prefix)) continue
    const path = join(dirname(lock), name)
    // a file being written has no pid yet: left alone
    const holder = holderOf(readText(path) ?? "")
    if (holder.pid !== undefined && stateOf(holder) === "stale") rmSync(path, { force: true })
  }
}

const take = (dataDir: string, lock: string) => {
  const pid = process.pid
  const record = JSON.stringify({ pid, boot: bootId(), started: processOf(pid)?.started, nonce: randomBytes(8).toString("hex") })
  claim(dataDir, lock, lock, record, 0)
  removeLeftovers(lock)
  return record
}

/** Holds the embedded database's directory for this process while the scope lives. */
export const lockDataDir = (dataDir: string) => {
  const lock = join(dataDir, "pg.lock")
  return Effect.acquireRelease(
    Effect.try({ try: () => take(dataDir, lock), catch: (cause) => cause }),
    // only our own lock: one taken over meanwhile (a mistaken takeover) is its new holder's
    (record) => Effect.sync(() => readText(lock) === record && rmSync(lock, { force: true }))
  )
}
