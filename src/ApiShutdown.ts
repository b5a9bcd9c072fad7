/**
 * The merchant API's shutdown. Http.ts makes it as the release of the API's listener; the realtime
 * feed's shutdown (Catalogue/Stream.ts) calls `stopListening` first: the feed tells its clients to
 * go elsewhere (1001) only once the API no longer listens, so that a client resuming at once is
 * refused here (a balancer then sends it to another node) instead of being taken again by the node
 * that is going away.
 */
import { Context, Deferred, Effect } from "effect"
import type { ServerDrain } from "./ServerDrain.js"

export class ApiShutdown extends Context.Tag("ApiShutdown")<ApiShutdown, {
  /**
   * The API's drain begins (`/ready` answers 503, every answer says `Connection: close`), and a
   * moment later (a balancer's health check has seen the 503) it stops listening: new connections
   * are refused from then on, and idle ones are closed. Returns once the listener is closed.
   * Idempotent: the API's own release calls it too, and then waits for the drain's end.
   */
  readonly stopListening: Effect.Effect<void>
}>() {}

/**
 * How long the API still takes connections once its drain began and /ready answers 503: a
 * balancer checking /ready every 500 ms takes the node out within it, so nothing it sends is
 * refused (at most a third of the grace).
 */
const LISTEN_WHILE_DRAINING_MS = 2_000
/** Once the listener is closed, how long a kept-alive connection may stay idle: a busy client's next request comes sooner. */
const CLOSE_IDLE_AFTER_MS = 1_000
/** What the grace leaves after it runs out: connections still closing (a feed's close handshake). */
const DRAIN_WAIT_PAST_GRACE = "5 seconds"

/**
 * The API's shutdown over its server's drain: `stopListening` begins the drain (ServerDrain.ts:
 * /ready 503), takes connections a little longer, then closes the listener; `release` does that
 * and waits for the drain's end, every connection closed (what is still open at the grace's end is
 * cut), before the request handlers are removed.
 */
export const makeApiShutdown = (drain: ServerDrain, graceSeconds: number) =>
  Effect.gen(function*() {
    const closed = yield* Deferred.make<void>()
    let drainStarted: number | undefined
    const stopListening = Effect.suspend(() => {
      if (drainStarted !== undefined) return Effect.void
      drainStarted = Date.now()
      drain.beginDrain()
      return Effect.sleep(Math.min(LISTEN_WHILE_DRAINING_MS, graceSeconds * 1000 / 3)).pipe(
        Effect.andThen(() => drain.closeListener(CLOSE_IDLE_AFTER_MS, () => Deferred.unsafeDone(closed, Effect.void)))
      )
    })
    const graceRanOut = Effect.zipRight(
      Effect.logWarning("the shutdown grace ran out: cutting the connections still open"),
      Deferred.await(closed).pipe(Effect.timeout(DRAIN_WAIT_PAST_GRACE), Effect.ignore)
    ).pipe(Effect.annotateLogs("grace_seconds", graceSeconds))
    const release = Effect.zipRight(
      stopListening,
      Effect.suspend(() =>
        Deferred.await(closed).pipe(
          Effect.timeout(Math.max(0, graceSeconds * 1000 - (Date.now() - drainStarted!))),
          Effect.catchTag("TimeoutException", () => graceRanOut)
        )
      )
    )
    return { service: ApiShutdown.of({ stopListening }), release } as const
  })
