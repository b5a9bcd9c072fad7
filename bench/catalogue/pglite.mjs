/**
 * bench/catalogue --pglite: the HTTP figures (search, filtered list, dump) on the embedded database:
 * for each HTTP size a start on a fresh DATA_DIR that fills itself by the supplier sync, then the
 * same rounds as on PostgreSQL, once the reconciliation is done.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fmtS } from "./figures.mjs"
import { httpBench } from "./http.mjs"
import { log, sleep } from "./lib.mjs"
import { merchantApiKey, reconcileOf, startService } from "./service.mjs"

export const pgliteHttp = async (bench, started, info) => {
  const { opts } = bench
  const results = {
    date: started.toISOString(),
    command: `node bench/catalogue/run.mjs ${bench.argv.join(" ")}`.trim(),
    machine: info,
    build: bench.build,
    database: "pglite",
    sizes: {}
  }
  for (const size of opts.httpSizes) {
    log(`\n== ${size.toLocaleString("en")} items on PGlite`)
    const tmp = mkdtempSync(join(tmpdir(), "bench-catalogue-pglite-"))
    const service = await startService(bench, { db: { url: undefined }, tmp, size, inspect: false, label: `service-pglite-${size}` })
    try {
      const reconcile = await reconcileOf(service)
      log(
        `  ready after ${fmtS(service.start.readyMs)}; reconciled ${reconcile.listings} listings (${reconcile.changes} changes) ${
          fmtS(reconcile.fromSpawnMs)
        } after spawn`
      )
      await sleep(opts.settleSeconds * 1000)
      const apiKey = await merchantApiKey(service)
      results.sizes[size] = { start: service.start, reconcile, http: await httpBench(bench, service, apiKey, tmp) }
    } finally {
      await service.stop()
      rmSync(tmp, { recursive: true, force: true })
    }
  }
  return results
}
