/**
 * The feed's connected clients (Stream.ts serves them): what the server keeps of each, the close
 * codes it sends them, and how they are closed at shutdown.
 */
import { Socket } from "@effect/platform"
import { Effect, Layer, type Queue } from "effect"
import type { Socket as NetSocket } from "node:net"
import { ApiShutdown } from "../ApiShutdown.js"

export const CLOSE_RESET = 4409
export const CLOSE_SLOW_CONSUMER = 4408
export const CLOSE_GOING_AWAY = 1001
/** The key was revoked or the merchant blocked while connected (RFC 6455: policy violation). */
export const CLOSE_POLICY = 1008
/** A session that failed (RFC 6455 1011): the client resumes from its last cursor. */
export const CLOSE_INTERNAL_ERROR = 1011

export interface Client {
  readonly merchantId: string
  /** The key the client connected with: checked again when its merchant's keys or status change. */
  readonly key: string
  position: number
  lastSentAt: number
  readonly socket: NetSocket
  /** The close this client gets once it left the live set (reset, slow consumer). */
  readonly closes: Queue.Queue<Socket.CloseEvent>
  /** Closes the socket now, through `ws`, and sends it nothing more (a revoked key, shutdown). */
  readonly close: (event: Socket.CloseEvent) => Effect.Effect<void>
  /** Once a close was sent: no data frame may follow it. */
  closed: boolean
}

/** How long shutdown waits for clients to answer the close (each leaves the set when its socket closes); then their sockets are cut. */
const CLOSE_HANDSHAKE_WAIT = "2 seconds"

/**
 * The connected feed clients. Shutdown closes every one with 1001 (going away) before the HTTP
 * server goes away (which would close them without a code), and from then on a client whose
 * upgrade was still under way is closed with 1001 as soon as it is connected.
 */
export class FeedClients extends Effect.Service<FeedClients>()("FeedClients", {
  sync: () => {
    const connected = new Set<Client>()
    let closing = false
    const goingAway = () => new Socket.CloseEvent(CLOSE_GOING_AWAY, "server shutting down: resume from your last cursor")
    const closeAll = Effect.gen(function*() {
      closing = true
      yield* Effect.forEach(connected, (client) => client.close(goingAway()), { discard: true, concurrency: "unbounded" })
      yield* Effect.sleep("20 millis").pipe(Effect.repeat({ until: () => connected.size === 0 }), Effect.timeout(CLOSE_HANDSHAKE_WAIT), Effect.ignore)
      for (const client of connected) client.socket.destroy()
    })
    return { connected, closeAll, closing: () => closing, goingAway } as const
  }
}) {}

/**
 * Built after the HTTP server, so it is released before it: the API stops listening first, then
 * every client is closed with 1001, so that one resuming at once is refused here and goes to
 * another node (behind a balancer) instead of being taken in again by this one.
 */
export const FeedShutdownLive = Layer.scopedDiscard(Effect.gen(function*() {
  const clients = yield* FeedClients
  const api = yield* ApiShutdown
  yield* Effect.addFinalizer(() => Effect.zipRight(api.stopListening, clients.closeAll))
}))
