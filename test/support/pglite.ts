/**
 * The embedded database's adapter on a copy of the migrated PGlite template, for the tests of
 * PGlite's own code paths (they run whatever DATABASE_URL says), and what those tests share.
 */
import type { SqlError } from "@effect/sql"
import { Effect, Layer } from "effect"
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import * as Pglite from "../../src/Db/Pglite.js"
import { PGLITE_TEMPLATE, TMP } from "./paths.js"

/** `Pglite.layer` on a fresh copy of the template; the copy is removed once the database has closed. */
export const pgliteCopyLayer = (prefix: string) => {
  const dataDir = mkdtempSync(`${TMP}${prefix}`)
  cpSync(PGLITE_TEMPLATE, `${dataDir}/pg`, { recursive: true })
  // a provided layer is released after its user: the database is closed first
  return Pglite.layer(`${dataDir}/pg`).pipe(
    Layer.provide(Layer.scopedDiscard(Effect.addFinalizer(() => Effect.sync(() => rmSync(dataDir, { recursive: true, force: true })))))
  )
}

/** it.effect runs on the TestClock, where Effect.sleep waits for ever: these waits are real ones. */
export const wallClockSleep = (millis: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, millis)))

/** A field PostgreSQL gave the error (code, constraint...), as the adapter passes it on. */
export const causeField = (error: SqlError.SqlError, field: string): unknown =>
  typeof error.cause === "object" && error.cause !== null && field in error.cause ? Reflect.get(error.cause, field) : undefined
