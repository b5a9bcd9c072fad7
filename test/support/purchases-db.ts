/**
 * Read-only queries of a test database once its servers are stopped: node-postgres on PostgreSQL,
 * the PGlite data directory itself on the embedded database (it cannot be opened while a server
 * holds it).
 */
import { PGlite } from "@electric-sql/pglite"
import pg from "pg"
import type { FreshDatabase } from "./database.js"

export type Query = <Row extends Record<string, unknown>>(text: string, params?: ReadonlyArray<unknown>) => Promise<Array<Row>>

export const withStoppedDatabase = async <A>(database: FreshDatabase, use: (query: Query) => Promise<A>): Promise<A> => {
  if (database.url !== undefined) {
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    try {
      return await use(async <Row extends Record<string, unknown>>(text: string, params: ReadonlyArray<unknown> = []) =>
        (await client.query(text, [...params])).rows as Array<Row>
      )
    } finally {
      await client.end()
    }
  }
  const db = await PGlite.create(`${database.dataDir}/pg`)
  try {
    return await use(async <Row extends Record<string, unknown>>(text: string, params: ReadonlyArray<unknown> = []) =>
      (await db.query<Row>(text, [...params])).rows
    )
  } finally {
    await db.close()
  }
}
