/**
 * bench/http's bare baseline (bare-server.mjs: `node:http` and `pg`, nothing else) started on the
 * service's database, and checked to answer GET /api/v1/merchant/balance with the service's bytes
 * and content-type.
 */
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort, log, sleep, startChild } from "../lib/harness.mjs"
import { fetchBalance } from "./load.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
/** The service's pool size (src/Db/Database.ts: maxConnections). */
const POOL_MAX = 20

const startBare = async (databaseUrl, keyLookup) => {
  const port = await freePort()
  const proc = startChild([join(HERE, "bare-server.mjs")], {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_URL: databaseUrl,
    POOL_MAX: String(POOL_MAX),
    KEY_LOOKUP: keyLookup,
    NODE_ENV: "production"
  }, "bare")
  const deadline = Date.now() + 15_000
  while (!proc.output().includes("listening")) {
    if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(`bare server did not start:\n${proc.output()}`)
    await sleep(20)
  }
  return { ...proc, baseUrl: `http://127.0.0.1:${port}` }
}

/**
 * The bare baseline on `databaseUrl`, once its answer to the bench's merchant is the service's,
 * byte for byte: the body and the headers only the service sends.
 */
export const startCheckedBare = async (opts, databaseUrl, service, apiKey) => {
  const bare = await startBare(databaseUrl, opts.bareKeyLookup)
  log(`bare baseline finds the key's merchant by: ${opts.bareKeyLookup}`)
  const a = await fetchBalance(service.baseUrl, apiKey)
  const b = await fetchBalance(bare.baseUrl, apiKey)
  log(`\nservice: ${a.status} ${a.contentType} ${a.body.toString()}`)
  log(`bare:    ${b.status} ${b.contentType} ${b.body.toString()}`)
  if (a.status !== 200 || b.status !== 200 || a.contentType !== b.contentType || !a.body.equals(b.body)) {
    await bare.stop()
    throw new Error("the service and the bare baseline do not answer with the same bytes")
  }
  log(`bodies are byte-identical (${a.body.length} bytes), content-type identical`)
  const extra = [...a.headers.keys()].filter((h) => !b.headers.has(h))
  log(`headers only the service sends: ${extra.join(", ") || "none"}`)
  return { bare, body: a.body.toString(), serviceOnlyHeaders: extra }
}
