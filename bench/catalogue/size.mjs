/**
 * bench/catalogue's sizes: the baseline with 0 items (migrations, the merchant, the memory
 * baseline), then each size in turn: populated, a start with its load time and memory then the
 * HTTP load, the dump regeneration, the CPU profile, as the options ask. Each size's figures go
 * into `r` and are saved as soon as they are known.
 */
import { createDatabase, holdLeaderLock, withClient } from "./database.mjs"
import { dumpBench } from "./dump.mjs"
import { fmtS, memoryNow, memorySnapshot, printMemory } from "./figures.mjs"
import { httpBench } from "./http.mjs"
import { log, sleep } from "./lib.mjs"
import { populate } from "./populate.mjs"
import { profileRun } from "./profile.mjs"
import { merchantApiKey, reconcileOf, startService } from "./service.mjs"

/**
 * The memory baseline with no items (on a database of its own when an existing one is reused);
 * what the database holds already, and the merchant's key when it was created here.
 */
export const baselineRun = async (bench, { db, tmp }) => {
  const { opts } = bench
  log(`\n== 0 items: migrations, merchant, baseline`)
  const populated = opts.db === undefined
    ? 0
    : await withClient(db.url, (c) => c.query("SELECT count(*)::int AS n FROM catalogue_items")).then((r) => r.rows[0].n)
  if (opts.db !== undefined) log(`  reusing ${db.name} with ${populated} items; the baseline runs on an empty database of its own`)
  const baseDb = opts.db === undefined ? db : await createDatabase("_base")
  const service = await startService(bench, { db: baseDb, tmp, size: 0, label: "service-0" })
  let apiKey
  if (opts.db === undefined) apiKey = await merchantApiKey(service)
  const baselineReconcile = await reconcileOf(service)
  await sleep(opts.settleSeconds * 1000)
  const baseline = await memorySnapshot(service)
  await service.stop()
  if (baseDb !== db) await baseDb.drop()
  log(`  loaded ${fmtS(service.start.loadMs)} after spawn; ready after ${fmtS(service.start.readyMs)}; reconcile ${baselineReconcile.changes} changes`)
  printMemory("memory with 0 items", baseline)
  return { populated, apiKey, baseline: { start: service.start, memory: baseline } }
}

/**
 * A start on the populated database (the sync's leader up to --leader-max, else a follower): load
 * time, memory after the first dump and the reconcile; then a start without the inspector for the
 * HTTP load. Returns the merchant's key (created on the first such start).
 */
const startAndLoad = async (bench, { db, tmp, save }, size, r, apiKey) => {
  const { opts } = bench
  const leads = size <= opts.leaderMax
  log(`  -- start as sync ${leads ? "leader" : "follower"} (dump every 1 h), memory, HTTP`)
  const lock = leads ? undefined : await holdLeaderLock(db.url)
  let service = await startService(bench, { db, tmp, size, label: `service-${size}` })
  try {
    apiKey ??= await merchantApiKey(service)
    log(
      `  loaded ${service.start.loadedItems} items ${fmtS(service.start.loadMs)} after spawn; ready after ${fmtS(service.start.readyMs)};` +
        ` first dump ${fmtS(service.start.firstDump.millis)}`
    )
    const reconcile = leads ? await reconcileOf(service) : undefined
    if (reconcile) {
      log(
        `  reconcile at start: ${reconcile.listings} listings, changes: ${reconcile.changes} in ${fmtS(reconcile.ms)}` +
          (reconcile.changes === 0 ? " (the database holds exactly what the sync would write)" : " WARNING: expected 0")
      )
    }
    await sleep(opts.settleSeconds * 1000)
    const memory = await memorySnapshot(service)
    printMemory("memory after load, first dump and reconcile", memory)
    r.start = service.start
    r.reconcileAtStart = reconcile
    r.memory = memory
    save()
    // the HTTP load on a start without the inspector, which the memory figures need: with
    // --inspect (no session attached) the young collections took up to 13 ms instead of 4,
    // and the p99 of /items/search was 11-22 ms instead of 5-8
    await service.stop()
    service = await startService(bench, { db, tmp, size, inspect: false, label: `service-${size}-http` })
    if (leads) await reconcileOf(service)
    await sleep(opts.settleSeconds * 1000)
    r.http = await httpBench(bench, service, apiKey, tmp)
    r.memoryAfterHttp = await memoryNow(service)
    save()
  } finally {
    await service.stop()
    await lock?.release()
  }
  return apiKey
}

/**
 * One size: `state` holds the database, the temporary directory, the items it holds so far and the
 * merchant's key, both updated here; `r` gets the size's figures.
 */
export const sizeRun = async (bench, state, size, r) => {
  const { opts } = bench
  const { db, tmp, save } = state
  log(`\n== ${size.toLocaleString("en")} items`)
  r.populate = await populate(bench, db, tmp, state.populated, size)
  state.populated = size
  save()

  if (opts.httpSizes.includes(size)) state.apiKey = await startAndLoad(bench, state, size, r, state.apiKey)

  if (opts.dumpSizes.includes(size)) {
    log(`  -- dump regeneration`)
    r.dump = await dumpBench(bench, db, tmp, size)
    if (r.memory === undefined) r.memory = r.dump.memorySteady
    save()
  }

  if (opts.profile && size === opts.profileSize) {
    log(`  -- CPU profile (node --cpu-prof; follower)`)
    if (state.apiKey === undefined) throw new Error("--profile needs its size among --http-sizes (for the merchant)")
    r.profile = await profileRun(bench, db, tmp, size, state.apiKey, state.started)
    save()
  }
}
