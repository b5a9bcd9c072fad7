import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))
export const TMP = `${ROOT}.tmp/`

/** The migrations' fingerprint: a template is reused only while the migrations are unchanged. */
const migrationsHash = () => {
  const hash = createHash("sha256")
  for (const file of readdirSync(`${ROOT}migrations`).sort()) hash.update(file).update(readFileSync(`${ROOT}migrations/${file}`))
  return hash.digest("hex").slice(0, 16)
}

/** A PGlite data directory with every migration applied, copied for each test database. */
export const PGLITE_TEMPLATE = `${TMP}pglite-template-${migrationsHash()}`

/**
 * The service as `npm start` runs it, read from package.json (`exec node [flags] <file>`): the
 * bundle with its node flags (globalSetup rebuilds it when a source is newer). Through tsx a
 * server costs about 6 s of CPU to start, the bundle about 2.5.
 */
export const SERVICE_ARGS: ReadonlyArray<string> = (JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).scripts.start as string)
  .replace(/^exec /, "").split(" ").slice(1).map((arg) => arg.endsWith(".mjs") ? `${ROOT}${arg}` : arg)
