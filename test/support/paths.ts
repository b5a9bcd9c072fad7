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
