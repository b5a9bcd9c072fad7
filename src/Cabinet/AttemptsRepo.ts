/**
 * The SQL of the cabinet's lockouts (Brakes.ts): one row per scope and subject (a login's
 * sign-ins, a merchant's step-up codes) holding the times of its attempts still in the window.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"

/** One window: whose attempts, and how many seconds back they count. */
const Window = Schema.Struct({ scope: Schema.String, subject: Schema.String, windowSeconds: Schema.Number })

export class CabinetAttemptsRepo extends Effect.Service<CabinetAttemptsRepo>()("CabinetAttemptsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Adds an attempt now if the window holds fewer than `places`: its time, or None when full.
     * One statement: the row lock of ON CONFLICT makes attempts at once wait for one another, and
     * each sees the times the ones before it added. Times out of the window are dropped as it goes.
     */
    const addAttempt = SqlSchema.findOne({
      Request: Schema.Struct({ ...Window.fields, places: Schema.Number }),
      Result: Schema.Struct({ attempt: Schema.String }),
      execute: ({ places, scope, subject, windowSeconds }) =>
        sql`INSERT INTO cabinet_attempts AS w (scope, subject, attempts) VALUES (${scope}, ${subject}, ARRAY[now()])
            ON CONFLICT (scope, subject) DO UPDATE
              SET attempts = ARRAY(SELECT a FROM unnest(w.attempts) a WHERE a > now() - make_interval(secs => ${windowSeconds})) || now(),
                  updated_at = now()
              WHERE (SELECT count(*) FROM unnest(w.attempts) a WHERE a > now() - make_interval(secs => ${windowSeconds})) < ${places}
            RETURNING w.attempts[cardinality(w.attempts)]::text AS attempt`
    })

    /** Whole seconds (at least 1) until the oldest attempt in the window leaves it. */
    const secondsUntilOpen = SqlSchema.single({
      Request: Window,
      Result: Schema.Struct({ seconds: Schema.Int }),
      execute: ({ scope, subject, windowSeconds }) =>
        sql`SELECT greatest(1, ceil(extract(epoch FROM min(a) + make_interval(secs => ${windowSeconds}) - now())))::int AS seconds
            FROM cabinet_attempts, unnest(attempts) a
            WHERE scope = ${scope} AND subject = ${subject} AND a > now() - make_interval(secs => ${windowSeconds})`
    })

    /** Removes one attempt's time (one time equal to it: two equal times are one and the same). */
    const removeAttempt = SqlSchema.void({
      Request: Schema.Struct({ scope: Schema.String, subject: Schema.String, attempt: Schema.String }),
      execute: ({ attempt, scope, subject }) =>
        sql`UPDATE cabinet_attempts
            SET attempts = attempts[:array_position(attempts, ${attempt}::timestamptz) - 1]
                           || attempts[array_position(attempts, ${attempt}::timestamptz) + 1:]
            WHERE scope = ${scope} AND subject = ${subject} AND ${attempt}::timestamptz = ANY (attempts)`
    })

    /** Deletes a login's sign-in attempts and its merchant's step-up attempts. */
    const forget = SqlSchema.void({
      Request: Schema.Struct({ login: Schema.String, merchantId: Schema.String }),
      execute: ({ login, merchantId }) =>
        sql`DELETE FROM cabinet_attempts WHERE (scope = 'sign-in' AND subject = ${login}) OR (scope = 'step-up' AND subject = ${merchantId})`
    })

    /** Deletes the rows whose newest attempt is older than the window. */
    const sweep = SqlSchema.void({
      Request: Schema.Number,
      execute: (windowSeconds) => sql`DELETE FROM cabinet_attempts WHERE updated_at < now() - make_interval(secs => ${windowSeconds})`
    })

    return { addAttempt, secondsUntilOpen, removeAttempt, forget, sweep } as const
  })
}) {}
