/**
 * Seeds catalogue_items directly with COPY (through psql), bypassing the service's sync: the rows
 * the sync leader would write for listings [from, to) of the synthetic catalogue (seed 730), with
 * the item column exactly `serialise(listing.item)` (dist/src/Domain/CatalogItem.js), so a service
 * started with SIM_CATALOGUE_SIZE = to finds nothing to change when it reconciles.
 * Rows are generated on worker threads (one per core) in chunks; COPY takes them in any order.
 */
import { spawn } from "node:child_process"
import { cpus } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"

let distSrc
let serialise
let syntheticListing
/** Where the build is (dist/src of the repository, or run.mjs's snapshot of it). */
export const useBuild = async (dir) => {
  distSrc = dir
  ;({ serialise } = await import(pathToFileURL(join(dir, "Domain/CatalogItem.js")).href))
  ;({ syntheticListing } = await import(pathToFileURL(join(dir, "Providers/Simulator/Listings.js")).href))
}

export const SEED = 730
const CHUNK = 10_000
const COLUMNS = "id, market_hash_name, price_cents, provider_price_cents, status, item, sim, source"

/** COPY text format: backslash, tab, newline and carriage return escaped. */
export const copyField = (s) => s.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"))

/** The catalogue_items row of listing `index`, as ChangeLog.upsertRun writes it (src/Catalogue/ChangeLog.ts). */
export const rowOf = (seed, index) => {
  const listing = syntheticListing(seed, index)
  const item = listing.item
  return {
    id: item.id,
    market_hash_name: item.market_hash_name,
    price_cents: Math.round(item.price * 100),
    provider_price_cents: listing.providerPriceCents,
    status: "active",
    item: serialise(item),
    sim: listing.sim === undefined ? null : JSON.stringify(listing.sim),
    source: "supplier"
  }
}

/**
 * Checks rows the service's own sync wrote (listings 0 .. count-1, each with a change-log entry)
 * against rowOf: the COPY rows are then what the sync would write. Returns the number compared.
 */
export const verifyAgainstSync = async (client, count) => {
  const rows = Array.from({ length: count }, (_, i) => rowOf(SEED, i))
  const found = await client.query(
    `SELECT i.id::text, i.market_hash_name, i.price_cents::text, i.provider_price_cents::text, i.status, i.item, i.sim, i.source,
            EXISTS (SELECT 1 FROM catalogue_changes c WHERE c.item_id = i.id AND c.op = 'upsert') AS logged
     FROM catalogue_items i WHERE i.id = ANY($1::uuid[])`,
    [rows.map((r) => r.id)]
  )
  const byId = new Map(found.rows.map((r) => [r.id, r]))
  let compared = 0
  for (const r of rows) {
    const d = byId.get(r.id)
    if (d === undefined || !d.logged) continue // not written by the sync
    compared++
    for (const k of ["market_hash_name", "status", "item", "sim", "source"]) {
      if (d[k] !== r[k]) throw new Error(`row ${r.id}: ${k} differs from the sync's:\n${d[k]}\n${r[k]}`)
    }
    if (Number(d.price_cents) !== r.price_cents || Number(d.provider_price_cents) !== r.provider_price_cents) {
      throw new Error(`row ${r.id}: prices differ from the sync's`)
    }
  }
  return compared
}

export const seedItems = async (databaseUrl, from, to, { workers = cpus().length, onProgress } = {}) => {
  if (to <= from) return { rows: 0, ms: 0 }
  const started = performance.now()
  const psql = spawn("psql", [databaseUrl, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", `COPY catalogue_items (${COLUMNS}) FROM STDIN`], {
    stdio: ["pipe", "pipe", "pipe"]
  })
  let psqlOutput = ""
  psql.stdout.on("data", (c) => {
    psqlOutput += c
  })
  psql.stderr.on("data", (c) => {
    psqlOutput += c
  })
  const psqlExit = new Promise((resolve) => psql.once("exit", resolve))
  const write = (text) =>
    new Promise((resolve, reject) => {
      if (psql.exitCode !== null) return reject(new Error(`psql exited: ${psqlOutput}`))
      if (psql.stdin.write(text)) resolve()
      else psql.stdin.once("drain", resolve)
    })

  const chunks = []
  for (let a = from; a < to; a += CHUNK) chunks.push([a, Math.min(to, a + CHUNK)])
  let next = 0
  let rows = 0
  const runWorker = () =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL("./seed-worker.mjs", import.meta.url), { workerData: { seed: SEED, distSrc } })
      const give = () => {
        if (next >= chunks.length) {
          worker.terminate().then(() => resolve())
          return
        }
        worker.postMessage(chunks[next++])
      }
      worker.on("message", async ({ text, count }) => {
        try {
          await write(text)
          rows += count
          onProgress?.(rows)
          give()
        } catch (error) {
          worker.terminate()
          reject(error)
        }
      })
      worker.on("error", reject)
      give()
    })
  await Promise.all(Array.from({ length: Math.max(1, workers) }, runWorker))
  psql.stdin.end()
  const code = await psqlExit
  if (code !== 0) throw new Error(`COPY failed (psql ${code}): ${psqlOutput}`)
  return { rows, ms: performance.now() - started }
}
