/** Readiness checks: each feature registers what must hold before the process takes traffic. */
import { Deferred, Effect } from "effect"
import { OpsRepo } from "./Repo.js"

export interface ReadinessReport {
  readonly ready: boolean
  readonly checks: Record<string, { readonly ok: boolean; readonly detail?: string }>
}

export class Readiness extends Effect.Service<Readiness>()("Readiness", {
  effect: Effect.gen(function*() {
    const repo = yield* OpsRepo
    const checks = new Map<string, Effect.Effect<boolean>>()

    // The database layer is built only after migrations ran, so a reachable database means both.
    checks.set("database", repo.ping.pipe(Effect.as(true), Effect.timeout("2 seconds"), Effect.orElseSucceed(() => false)))
    checks.set("migrations", Effect.succeed(true))

    const register = (name: string, check: Effect.Effect<boolean>) =>
      Effect.sync(() => {
        checks.set(name, check)
      })

    // Background work that can wait (the supplier's reconciliation) starts once the API listens,
    // so start-up is not spent on it: the index loaded from the database is served meanwhile.
    const serving = yield* Deferred.make<void>()
    const markServing = Deferred.succeed(serving, undefined)
    const awaitServing = Deferred.await(serving)
    // The merchant API takes traffic from when it listens until it begins to drain (SIGTERM).
    let draining = false
    checks.set("api", Effect.map(Deferred.isDone(serving), (listening) => listening && !draining))
    /** The API stopped taking new work (synchronous: node's server calls it as it begins to close). */
    const markDraining = (): void => {
      draining = true
    }

    const report: Effect.Effect<ReadinessReport> = Effect.gen(function*() {
      const results = yield* Effect.forEach(
        Array.from(checks),
        ([name, check]) => Effect.map(Effect.catchAllCause(check, () => Effect.succeed(false)), (ok) => [name, { ok }] as const),
        { concurrency: "unbounded" }
      )
      return { ready: results.every(([, r]) => r.ok), checks: Object.fromEntries(results) }
    })

    return { register, report, markServing, awaitServing, markDraining } as const
  }),
  dependencies: [OpsRepo.Default]
}) {}
