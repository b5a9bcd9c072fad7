/**
 * The embedded database is for one process: a second one on the same DATA_DIR would run on its own
 * copy of the pages and one's writes would be lost. The first process holds `DATA_DIR/pg.lock`
 * (its pid) while it runs; another start on the same directory stops with a message. A lock left
 * by a process that died (no such pid, or our own pid again after a container restart) is taken over.
 */
import { Effect } from "effect"
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // it exists, but is not ours to signal
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const take = (path: string, dataDir: string) => {
  try {
    closeSync(openSync(path, "wx", 0o600))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    const holder = Number(readFileSync(path, "utf8").trim())
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isRunning(holder)) {
      throw new Error(
        `DATA_DIR ${dataDir} is in use by another process (pid ${holder}): the embedded database is for one process; ` +
          "stop it, or give each process its own DATA_DIR, or run several on one PostgreSQL with DATABASE_URL"
      )
    }
  }
  writeFileSync(path, String(process.pid), { mode: 0o600 })
}

/** Holds the embedded database's directory for this process while the scope lives. */
export const lockDataDir = (dataDir: string) => {
  const path = join(dataDir, "pg.lock")
  return Effect.acquireRelease(
    Effect.try({ try: () => take(path, dataDir), catch: (cause) => cause }),
    () => Effect.sync(() => rmSync(path, { force: true }))
  )
}
