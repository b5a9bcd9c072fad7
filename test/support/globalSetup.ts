/**
 * Once per run: on PGlite, build a migrated template data directory (initdb takes seconds; a copy
 * takes milliseconds). On PostgreSQL (DATABASE_URL), check the server answers.
 */
import { Effect, Layer } from "effect"
import { mkdirSync, rmSync } from "node:fs"
import pg from "pg"
import { migrate } from "../../src/Db/Migrations.js"
import * as Pglite from "../../src/Db/Pglite.js"
import { PGLITE_TEMPLATE, TMP } from "./paths.js"

export default async function setup() {
  mkdirSync(TMP, { recursive: true })
  const url = process.env["DATABASE_URL"]
  if (url !== undefined && url !== "") {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query("SELECT 1")
    await client.end()
    return
  }
  rmSync(PGLITE_TEMPLATE, { recursive: true, force: true })
  await Effect.runPromise(migrate.pipe(Effect.provide(Layer.orDie(Pglite.layer(PGLITE_TEMPLATE)))))
}
