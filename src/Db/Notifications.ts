/**
 * LISTEN, as the project's own service: every stream fails when its connection is lost and first
 * emits LISTENING (Listen.ts). On PostgreSQL each stream has a connection of its own
 * (`listenOnOwnConnection`); on the embedded database, the one session's listener (Pglite.ts).
 * A service of the project rather than @effect/sql-pg's `PgClient.listen`, whose stream stays open
 * and silent once its connection is lost and which is not the project's to replace.
 */
import type { SqlError } from "@effect/sql"
import { Context, type Stream } from "effect"

export class DbNotifications extends Context.Tag("DbNotifications")<DbNotifications, {
  /** The payloads notified on `channel`, after LISTENING; fails when the connection is lost. */
  readonly listen: (channel: string) => Stream.Stream<string, SqlError.SqlError>
}>() {}
