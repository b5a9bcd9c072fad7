/**
 * Once per run: on PGlite, make sure a migrated template data directory exists for the current
 * migrations (initdb takes seconds; a copy takes milliseconds). It is built aside and renamed into
 * place, so runs in parallel never see half a template. On PostgreSQL (DATABASE_URL), check the
 * server answers.
 */
import { Effect, Layer } from "effect"
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs"
import pg from "pg"
import { migrate } from "../../src/Db/Migrations.js"
import * as Pglite from "../../src/Db/Pglite.js"
import { buildIfStale } from "./build.js"
import { PGLITE_TEMPLATE, TMP } from "./paths.js"

export default async function setup() {
  mkdirSync(TMP, { recursive: true })
  buildIfStale()
  const url = process.env["DATABASE_URL"]
  if (url !== undefined && url !== "") {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query("SELECT 1")
    await client.end()
    return
  }
  if (existsSync(PGLITE_TEMPLATE)) return
  const building = `${PGLITE_TEMPLATE}.${process.pid}.building`
  rmSync(building, { recursive: true, force: true })
  await Effect.runPromise(migrate.pipe(Effect.provide(Layer.orDie(Pglite.layer(building)))))
  try {
    renameSync(building, PGLITE_TEMPLATE)
  } catch {
    // another run put it in place first
    rmSync(building, { recursive: true, force: true })
  }
}
