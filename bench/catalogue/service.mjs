/**
 * The service as bench/catalogue starts it: the measured build with SIM_CATALOGUE_SIZE = the size
 * and no churn, its whole output logged to a file, ready once /ready answers and the first dump is
 * built; its log events (load, dumps, the sync's reconcile), its /metrics and the run's merchant.
 */
import { join } from "node:path"
import { admin, serviceEnv, START } from "../lib/harness.mjs"
import { cpuMs, freePort, httpOk, parseMetrics, sleep, startChild } from "./lib.mjs"

/** The shared service environment (bench/lib/service.mjs) with the catalogue's size, no churn, the dump's interval and info logs. */
const catalogueServiceEnv = (opts, { port, opsPort, databaseUrl, dataDir, size, dumpInterval, nodeOptions }) => {
  const env = serviceEnv({
    port,
    opsPort,
    databaseUrl,
    dataDir,
    extra: {
      LOG_LEVEL: "info",
      SIM_CATALOGUE_SIZE: String(size),
      SIM_CHURN_PER_SECOND: "0",
      DUMP_INTERVAL_SECONDS: String(dumpInterval),
      ...opts.serviceEnv
    }
  })
  delete env.SIM_CATALOGUE
  delete env.NODE_OPTIONS
  if (nodeOptions) env.NODE_OPTIONS = nodeOptions
  return env
}

export const messageOf = (e) => (Array.isArray(e.message) ? e.message[0] : e.message)

/**
 * Starts `node [nodeArgs] dist/src/main.js` of the measured build (`bench.build`) with
 * SIM_CATALOGUE_SIZE = size and waits until /ready answers 200 (index loaded, synced once), then
 * for the first dump, built after /ready. Times from the spawn. Its output goes to a numbered file
 * in `bench.logs`.
 */
export const startService = async (
  bench,
  { db, tmp, size, dumpInterval = 3600, nodeArgs = [], inspect = true, readyTimeoutMs = 1_800_000, label = "service" }
) => {
  const { opts } = bench
  const port = await freePort()
  const opsPort = await freePort()
  const nodeOptions = size >= opts.largeHeapFrom ? `--max-old-space-size=${opts.largeHeapMb}` : undefined
  const env = catalogueServiceEnv(opts, { port, opsPort, databaseUrl: db.url, dataDir: join(tmp, "data"), size, dumpInterval, nodeOptions })
  // --inspect: for a forced GC and exact memory figures (lib.mjs gcAndMeasure); idle otherwise
  // with npm start's node flags (the V8 settings the service ships with)
  const proc = startChild(process.execPath, [...START.nodeFlags, ...(inspect ? ["--inspect=127.0.0.1:0"] : []), ...nodeArgs, bench.build.main], {
    env,
    label,
    logFile: join(bench.logs, `${String(++bench.serviceStarts).padStart(2, "0")}-${label}.log`)
  })
  const opsUrl = `http://127.0.0.1:${opsPort}`
  const loaded = await proc.waitLog("catalogue loaded", { timeoutMs: readyTimeoutMs })
  const deadline = Date.now() + readyTimeoutMs
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`service exited with ${proc.child.exitCode}:\n${proc.output().slice(-4000)}`)
    if (Date.now() > deadline) {
      await proc.stop()
      throw new Error(`service did not become ready:\n${proc.output().slice(-4000)}`)
    }
    if (await httpOk(`${opsUrl}/ready`)) break
    await sleep(100)
  }
  const readyAt = Date.now()
  // the rounds and the memory figures come after it, as they did when /ready waited for it
  const firstDump = (await proc.waitLog("catalogue dump built", { timeoutMs: readyTimeoutMs })).event
  return {
    ...proc,
    size,
    nodeOptions,
    baseUrl: `http://127.0.0.1:${port}`,
    opsUrl,
    start: {
      loadedItems: loaded.event.annotations.items,
      /** spawn -> "catalogue loaded" (node start, imports, migrations check, the paged load) */
      loadMs: loaded.event.at - proc.spawnedAt,
      readyMs: readyAt - proc.spawnedAt,
      cpuMsAtReady: cpuMs(proc.pid),
      firstDump: dumpOf(firstDump)
    }
  }
}

/** A "catalogue dump built" log event's figures. */
export const dumpOf = (e) => ({
  items: e.annotations.items,
  pieces: Number(e.annotations.pieces),
  piecesReused: Number(e.annotations.pieces_reused),
  millis: Number(e.annotations.millis),
  gzipBytes: Number(e.annotations.gzip_bytes),
  jsonBytes: Number(e.annotations.json_bytes),
  endAt: e.at,
  startAt: e.at - Number(e.annotations.millis)
})

/** The sync leader's "catalogue reconciled" line and its duration from "this process leads". */
export const reconcileOf = async (service, timeoutMs = 3_600_000) => {
  const { event } = await service.waitLog("catalogue reconciled with the supplier", { timeoutMs })
  const leads = service.events.find((e) => messageOf(e) === "supplier sync: this process leads")
  return {
    listings: event.annotations.listings,
    changes: event.annotations.changes,
    ms: leads ? event.at - leads.at : undefined,
    fromSpawnMs: event.at - service.spawnedAt
  }
}

export const scrape = async (service) => {
  const res = await fetch(`${service.opsUrl}/metrics`)
  return parseMetrics(await res.text())
}

/** The run's merchant, created through the admin API: its API key. */
export const merchantApiKey = async (service) =>
  (await admin(service, "/admin/merchants", { name: `bench-catalogue-${process.pid}`, webhook_url: null })).api_key
