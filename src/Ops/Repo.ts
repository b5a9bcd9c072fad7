/** The SQL of the ops listener: the readiness check's round trip to the database. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export class OpsRepo extends Effect.Service<OpsRepo>()("OpsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** A round trip to the database (it answers: it is up and reachable). */
    const ping = sql`SELECT 1`.pipe(Effect.asVoid)

    return { ping } as const
  })
}) {}
