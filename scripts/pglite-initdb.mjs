/**
 * A new embedded database's files, made once at build time (dist/pglite-initdb): a first start
 * copies them instead of running PGlite's initdb, which took about 2.5 s of a fresh start
 * (src/Db/Pglite.ts). Made again only when the installed PGlite's version changes.
 */
import { PGlite } from "@electric-sql/pglite"
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"

const TEMPLATE = "dist/pglite-initdb"
const STAMP = `${TEMPLATE}.version`
const version = JSON.parse(readFileSync("node_modules/@electric-sql/pglite/package.json", "utf8")).version

if (!existsSync(TEMPLATE) || !existsSync(STAMP) || readFileSync(STAMP, "utf8") !== version) {
  const building = `${TEMPLATE}.${process.pid}.building`
  rmSync(building, { recursive: true, force: true })
  const db = await PGlite.create(building)
  await db.close()
  rmSync(TEMPLATE, { recursive: true, force: true })
  renameSync(building, TEMPLATE)
  writeFileSync(STAMP, version)
}
