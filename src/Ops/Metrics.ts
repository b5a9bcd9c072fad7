/**
 * Prometheus metrics through prom-client: HTTP requests by route and status, Effect's own fiber
 * metrics, the supervised fibers, and gauges that features refresh at scrape time.
 */
import { Effect, Metric } from "effect"
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client"
import { Fibers } from "./Fibers.js"
import { makeRequestMetrics } from "./RequestMetrics.js"

export class Metrics extends Effect.Service<Metrics>()("Metrics", {
  effect: Effect.gen(function*() {
    const fibers = yield* Fibers
    const registry = new Registry()
    collectDefaultMetrics({ register: registry })
    const registers = [registry]

    const recordRequestSeries = makeRequestMetrics(registry)
    const effectFibers = new Gauge({
      name: "effect_fibers",
      help: "Effect runtime fiber counters (started, active, successes, failures)",
      labelNames: ["kind"] as const,
      registers
    })
    // a counter (it only grows), brought up to the registry's count at each scrape
    const supervisedRestarts = new Counter({
      name: "supervised_fiber_restarts_total",
      help: "Restarts of each supervised fiber since the process started",
      labelNames: ["fiber"] as const,
      registers
    })
    const restartsCounted = new Map<string, number>()
    const supervisedRunning = new Gauge({
      name: "supervised_fiber_running",
      help: "1 while the supervised fiber is running, 0 while it waits to restart or has stopped",
      labelNames: ["fiber"] as const,
      registers
    })

    const scrapeHooks: Array<Effect.Effect<void>> = []

    const effectFiberCounters = [
      ["started", Metric.fiberStarted],
      ["active", Metric.fiberActive],
      ["successes", Metric.fiberSuccesses],
      ["failures", Metric.fiberFailures]
    ] as const

    const refreshBuiltIn = Effect.gen(function*() {
      for (const [kind, counter] of effectFiberCounters) {
        const state = yield* Metric.value(counter)
        effectFibers.set({ kind }, state.count)
      }
      for (const fiber of fibers.list()) {
        supervisedRestarts.inc({ fiber: fiber.name }, fiber.restarts - (restartsCounted.get(fiber.name) ?? 0))
        restartsCounted.set(fiber.name, fiber.restarts)
        supervisedRunning.set({ fiber: fiber.name }, fiber.state === "running" ? 1 : 0)
      }
    })

    // requests the merchant API answered: background work gives way while they keep the process busy
    let apiRequests = 0
    const recordRequest = (server: string, method: string, route: string, status: number, seconds: number) => {
      if (server === "api") apiRequests += 1
      recordRequestSeries(server, method, route, status, seconds)
    }

    /** A gauge of this registry; `refresh` (if given) runs before every scrape. */
    const gauge = <L extends string>(
      options: { readonly name: string; readonly help: string; readonly labelNames?: ReadonlyArray<L> }
    ) => new Gauge<L>({ ...options, labelNames: options.labelNames ?? [], registers })

    const counter = <L extends string>(
      options: { readonly name: string; readonly help: string; readonly labelNames?: ReadonlyArray<L> }
    ) => new Counter<L>({ ...options, labelNames: options.labelNames ?? [], registers })

    const histogram = <L extends string>(
      options: {
        readonly name: string
        readonly help: string
        readonly buckets: ReadonlyArray<number>
        readonly labelNames?: ReadonlyArray<L>
      }
    ) => new Histogram<L>({ ...options, buckets: [...options.buckets], labelNames: options.labelNames ?? [], registers })

    const onScrape = (refresh: Effect.Effect<void>) =>
      Effect.sync(() => {
        scrapeHooks.push(refresh)
      })

    /** The Prometheus text exposition. A failing refresh leaves its gauges at their last value. */
    const render = Effect.gen(function*() {
      yield* refreshBuiltIn
      for (const hook of scrapeHooks) yield* Effect.catchAllCause(hook, (cause) => Effect.logWarning("metrics refresh failed", cause))
      return yield* Effect.promise(() => registry.metrics())
    })

    return { recordRequest, apiRequestsAnswered: () => apiRequests, gauge, counter, histogram, onScrape, render, contentType: registry.contentType } as const
  }),
  dependencies: [Fibers.Default]
}) {}
