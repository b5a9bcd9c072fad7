/**
 * Once per run: on PGlite, make sure a migrated template data directory exists for the current
 * migrations (initdb takes seconds; a copy takes milliseconds). It is built aside and renamed into
 * place, so runs in parallel never see half a template. On PostgreSQL (DATABASE_URL), check the
 * server answers.
 */
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs"
import pg from "pg"
import { migrate } from "../../src/Db/Migrations.js"
import * as Pglite from "../../src/Db/Pglite.js"
import { PGLITE_TEMPLATE, ROOT, TMP } from "./paths.js"

/** The compiled service and the CLI's bundle (the CLI tests run it as `npm run cli` does); rebuilt when a source is newer. */
const buildIfStale = () => {
  const built = `${ROOT}dist/bundle/cli.mjs`
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { withFileTypes: true }).map((e) => e.isDirectory() ? newest(`${dir}/${e.name}`) : statSync(`${dir}/${e.name}`).mtimeMs))
  if (existsSync(built) && statSync(built).mtimeMs >= newest(`${ROOT}src`)) return
  execFileSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, "-p", `${ROOT}tsconfig.build.json`], { stdio: "inherit" })
  execFileSync(process.execPath, [`${ROOT}scripts/bundle.mjs`], { cwd: ROOT, stdio: "inherit" })
}

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
