/**
 * Bringing bench/catalogue's database to a size: by the service's own supplier sync (a start with
 * SIM_CATALOGUE_SIZE = the size, its reconcile timed) up to --sync-populate-max, beyond it by COPY
 * of the same rows (seed.mjs); then seed.mjs's rows checked against the rows the sync wrote, and
 * VACUUM.
 */
import { vacuum, withClient } from "./database.mjs"
import { fmtS, memoryNow } from "./figures.mjs"
import { cpuMs, log, round, sleep } from "./lib.mjs"
import { seedItems, verifyAgainstSync } from "./seed.mjs"
import { reconcileOf, scrape, startService } from "./service.mjs"

/** Starts the service with SIM_CATALOGUE_SIZE = size as the sync leader and times its reconcile. */
export const syncTo = async (bench, db, tmp, size) => {
  const service = await startService(bench, { db, tmp, size, label: `service-sync-${size}` })
  try {
    const reconcile = await reconcileOf(service)
    // the index must hold them all: wait for the tail to catch up
    for (let i = 0; i < 600; i++) {
      const m = await scrape(service)
      if (m.get("catalogue_items") === size) break
      await sleep(500)
    }
    const caughtUpMs = Date.now() - service.spawnedAt
    return { ...reconcile, caughtUpMs, start: service.start, cpuMs: cpuMs(service.pid), memory: await memoryNow(service) }
  } finally {
    await service.stop()
  }
}

/** From `populated` to `size` items (reused when it holds them already): how, and the check of the rows. */
export const populate = async (bench, db, tmp, populated, size) => {
  let r
  if (populated > size) throw new Error(`${db.name} holds ${populated} items, more than ${size}`)
  if (populated === size) {
    log(`  populate: ${db.name} already holds ${size} items`)
    r = { method: "reused", from: populated }
  } else if (size <= bench.opts.syncPopulateMax) {
    log(`  populate: the service's supplier sync, ${populated} -> ${size} items`)
    const s = await syncTo(bench, db, tmp, size)
    log(
      `  sync: reconciled ${s.listings} listings with ${s.changes} changes in ${fmtS(s.ms)} (from spawn ${fmtS(s.fromSpawnMs)});` +
        ` index caught up ${fmtS(s.caughtUpMs)} after spawn; ${round(s.changes / (s.ms / 1000))} items/s; service CPU ${fmtS(s.cpuMs)}`
    )
    r = { method: "sync", from: populated, ...s }
  } else {
    log(`  populate: COPY of the synthetic rows ${populated} -> ${size} (seed.mjs)`)
    const s = await seedItems(db.url, populated, size, {})
    log(`  COPY: ${s.rows} rows in ${fmtS(s.ms)}`)
    r = { method: "copy", from: populated, ...s }
  }
  const compared = await withClient(db.url, (c) => verifyAgainstSync(c, 2000))
  log(
    compared > 0
      ? `  check: ${compared} rows the service's sync wrote are byte-identical to seed.mjs's rows for the same listings`
      : `  check: no rows written by the service's sync to compare with (seed.mjs rows unchecked)`
  )
  r.verifiedRows = compared
  if (r.method !== "reused") r.vacuumMs = await vacuum(db)
  return r
}
