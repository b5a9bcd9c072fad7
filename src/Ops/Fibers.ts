/**
 * The registry of supervised fibers: long-running background work (listeners, workers, the dump
 * builder, the webhook sender) is started here, named, restarted with backoff when it fails or
 * ends, and reported by `/ops/fibers` and `/metrics`.
 *
 * A restart is an error in the log, except when the body failed only because the database was out
 * of reach (Db/ConnectionLoss.ts): that is the outage's expected consequence, logged as a warning
 * that names it, and retried sooner (at most 1 s apart), so the fibers are back within a second or
 * so of the database.
 */
import { Cause, Clock, Duration, Effect, Exit, type Scope } from "effect"
import { isConnectionLossCause } from "../Db/ConnectionLoss.js"

export type FiberState = "starting" | "running" | "restarting" | "stopped"

export interface FiberReport {
  readonly name: string
  readonly state: FiberState
  readonly restarts: number
  readonly last_error: string | null
  readonly last_heartbeat: string | null
  readonly started_at: string
}

interface Entry {
  state: FiberState
  restarts: number
  lastError: string | null
  lastHeartbeat: number | null
  readonly startedAt: number
}

/**
 * Short enough that, once a lost database is back, every fiber is again within seconds (at 30 s the
 * catalogue sync, the LISTENs and the reservations' log stayed down up to 19 s while /ready said 200).
 */
const MAX_BACKOFF = Duration.seconds(5)
/** The longest wait before a restart after a lost database connection: an attempt against a database still down costs little. */
const MAX_BACKOFF_CONNECTION_LOST = Duration.seconds(1)
/** A run that lasted this long was healthy: the next failure starts the backoff from the beginning. */
const HEALTHY_RUN = Duration.seconds(60)

export class Fibers extends Effect.Service<Fibers>()("Fibers", {
  sync: () => {
    const entries = new Map<string, Entry>()

    /**
     * Runs `body` in a fiber of the caller's scope for as long as that scope lives. `body` gets a
     * heartbeat to call when it makes progress. A failure, defect or return restarts it after an
     * exponential backoff (100 ms doubling, at most 5 s; at most 1 s after a lost database connection).
     */
    const supervise = <E, R>(
      name: string,
      body: (heartbeat: Effect.Effect<void>) => Effect.Effect<unknown, E, R>
    ): Effect.Effect<void, never, R | Scope.Scope> =>
      Effect.gen(function*() {
        const startedAt = yield* Clock.currentTimeMillis
        const entry: Entry = { state: "starting", restarts: 0, lastError: null, lastHeartbeat: null, startedAt }
        entries.set(name, entry)
        const heartbeat = Effect.map(Clock.currentTimeMillis, (now) => {
          entry.lastHeartbeat = now
        })
        const loop = Effect.gen(function*() {
          let failuresInARow = 0
          while (true) {
            entry.state = "running"
            const runStarted = yield* Clock.currentTimeMillis
            const exit = yield* Effect.exit(body(heartbeat))
            const ranFor = (yield* Clock.currentTimeMillis) - runStarted
            entry.restarts += 1
            entry.state = "restarting"
            entry.lastError = Exit.isFailure(exit)
              ? Cause.pretty(exit.cause).slice(0, 2_000)
              : "exited unexpectedly"
            const connectionLost = Exit.isFailure(exit) && isConnectionLossCause(exit.cause)
            yield* (connectionLost
              ? Effect.logWarning("supervised fiber lost its database connection; restarting", entry.lastError)
              : Effect.logError("supervised fiber stopped; restarting", entry.lastError)).pipe(
                Effect.annotateLogs({ fiber: name, restarts: entry.restarts })
              )
            failuresInARow = ranFor >= Duration.toMillis(HEALTHY_RUN) ? 1 : failuresInARow + 1
            const delay = Duration.min(
              Duration.millis(100 * 2 ** Math.min(failuresInARow - 1, 10)),
              connectionLost ? MAX_BACKOFF_CONNECTION_LOST : MAX_BACKOFF
            )
            yield* Effect.sleep(delay)
          }
        }).pipe(
          Effect.onExit(() =>
            Effect.sync(() => {
              entry.state = "stopped"
            })
          ),
          Effect.annotateLogs("fiber", name)
        )
        yield* Effect.forkScoped(loop)
      })

    const list = (): ReadonlyArray<FiberReport> =>
      Array.from(entries, ([name, e]) => ({
        name,
        state: e.state,
        restarts: e.restarts,
        last_error: e.lastError,
        last_heartbeat: e.lastHeartbeat === null ? null : new Date(e.lastHeartbeat).toISOString(),
        started_at: new Date(e.startedAt).toISOString()
      }))

    return { supervise, list } as const
  }
}) {}
