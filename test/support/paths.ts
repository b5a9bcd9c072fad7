import { fileURLToPath } from "node:url"

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))
export const TMP = `${ROOT}.tmp/`
/** A PGlite data directory with every migration applied, copied for each test database. */
export const PGLITE_TEMPLATE = `${TMP}pglite-template`
