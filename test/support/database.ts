/**
 * A fresh, migrated database for one test file: a copy of the PGlite template, or a new database
 * on the PostgreSQL server of DATABASE_URL (dropped at the end).
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import pg from "pg"
import { PGLITE_TEMPLATE, TMP } from "./paths.js"

export interface FreshDatabase {
  /** Set as DATABASE_URL for a server, or undefined on PGlite. */
  readonly url: string | undefined
  /** DATA_DIR for a server: its pg/ is the fresh PGlite copy. */
  readonly dataDir: string
  readonly drop: () => Promise<void>
}

let counter = 0

export const freshDatabase = async (): Promise<FreshDatabase> => {
  const dataDir = mkdtempSync(`${TMP}data-`)
  const serverUrl = process.env["DATABASE_URL"]
  if (serverUrl === undefined || serverUrl === "") {
    cpSync(PGLITE_TEMPLATE, `${dataDir}/pg`, { recursive: true })
    return { url: undefined, dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) }
  }
  const name = `mps_test_${process.pid}_${Date.now()}_${counter++}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    dataDir,
    drop: async () => {
      rmSync(dataDir, { recursive: true, force: true })
      const client = new pg.Client({ connectionString: serverUrl })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined)
      await client.end()
    }
  }
}

/**
 * A node-postgres pool on a fresh database of the server. Its `end()` resolves before its clients'
 * sockets have closed, and the forced drop that follows terminates them: the pool then reports
 * the termination (57P01) of a client it no longer holds as its 'error' event, which with no
 * listener fails the run. Errors of idle clients are the pool's to report, not a test's.
 */
export const serverPool = (url: string | undefined, max: number): pg.Pool => {
  const pool = new pg.Pool({ connectionString: url, max })
  pool.on("error", () => undefined)
  return pool
}

/** Rows of `query` on the database when it is on the PostgreSQL server; undefined on PGlite (its files are the server process's). */
export const serverRows = async (database: FreshDatabase, query: string): Promise<Array<any> | undefined> => {
  if (database.url === undefined) return undefined
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  try {
    return (await client.query(query)).rows
  } finally {
    await client.end()
  }
}
