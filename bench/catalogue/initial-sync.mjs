/**
 * bench/catalogue --initial-sync-only N: only the initial sync of N items into an empty catalogue
 * (a database of its own), timed to "catalogue reconciled" and to the index holding them all.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createDatabase } from "./database.mjs"
import { fmtS, printMemory } from "./figures.mjs"
import { log } from "./lib.mjs"
import { syncTo } from "./populate.mjs"

export const initialSyncOnly = async (bench, started, info) => {
  const { opts } = bench
  const db = await createDatabase("_sync")
  const tmp = mkdtempSync(join(tmpdir(), "mps-bench-cat-"))
  const results = {
    date: started.toISOString(),
    command: `node bench/catalogue/run.mjs ${bench.argv.join(" ")}`,
    machine: info,
    build: bench.build,
    options: opts
  }
  try {
    log(`database ${db.name}: initial sync of ${opts.initialSyncOnly} items into an empty catalogue`)
    const r = await syncTo(bench, db, tmp, opts.initialSyncOnly)
    log(
      `  reconciled ${r.listings} listings, ${r.changes} changes: ${fmtS(r.ms)} (from spawn ${fmtS(r.fromSpawnMs)}); index caught up ${
        fmtS(r.caughtUpMs)
      } after spawn;` +
        ` service CPU ${fmtS(r.cpuMs)}`
    )
    printMemory("memory after the sync", r.memory)
    results.initialSync = r
  } finally {
    await db.drop().catch((e) => log(`could not drop ${db.name}: ${e.message}`))
    rmSync(tmp, { recursive: true, force: true })
  }
  return results
}
