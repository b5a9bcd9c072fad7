/**
 * The merchant API's shutdown as the realtime feed's shutdown sees it: the feed tells its clients
 * to go elsewhere (1001) only once the API no longer listens, so that a client resuming at once
 * is refused here (a balancer then sends it to another node) instead of being taken again by the
 * node that is going away. Http.ts makes it; Catalogue/Stream.ts uses it.
 */
import { Context, type Effect } from "effect"

export class ApiShutdown extends Context.Tag("ApiShutdown")<ApiShutdown, {
  /**
   * The API's drain begins (`/ready` answers 503, every answer says `Connection: close`), and a
   * moment later (a balancer's health check has seen the 503) it stops listening: new connections
   * are refused from then on, and idle ones are closed. Returns once the listener is closed.
   * Idempotent: the API's own release calls it too, and then waits for the drain's end.
   */
  readonly stopListening: Effect.Effect<void>
}>() {}
