/**
 * WebSocket upgrades of the public listener (the catalogue feed, Catalogue/Stream.ts). The
 * server's one 'upgrade' listener hands each such request to the Effect app like any other, with
 * a response of its own on the request's socket (`accept`): a refusal before the upgrade (a bad
 * key, a bad query) is an ordinary HTTP answer through the same middleware, and the socket is
 * ended after it. A handler that takes the request asks for the upgrade (`upgrade`): the 101
 * handshake is `ws`'s, and the response leaves the socket, so the handler's final empty answer
 * writes nothing.
 */
import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Data, Effect, type Scope } from "effect"
import { type IncomingMessage, ServerResponse } from "node:http"
import { Socket as NetSocket } from "node:net"
import type { Duplex } from "node:stream"
import { WebSocket, WebSocketServer } from "ws"

/** The request did not come as an upgrade (node's 'upgrade' event): nothing to upgrade. */
export class NotAnUpgrade extends Data.TaggedError("NotAnUpgrade")<{ readonly url: string }> {}

/** How a WebSocket closed: its code and reason, as the close frame said (1006: no close frame). */
export interface Closed {
  readonly code: number
  readonly reason: string
}

/** An upgraded connection as the feed uses it: data frames go straight to the request's socket. */
export interface UpgradedSocket {
  /** Sends a close frame (`ws` completes the handshake and ends the socket). */
  readonly close: (code: number, reason: string) => Effect.Effect<void>
  /** Waits for the connection's end, however it ended. */
  readonly closed: Effect.Effect<Closed>
}

/** A request that came as an upgrade, until its handler upgrades it or answers it. */
interface Pending {
  readonly socket: NetSocket
  readonly head: Buffer
  readonly response: ServerResponse
  upgraded: boolean
}

/** A socket that node handed over for an upgrade: an error with no listener would end the process. */
const dropOnError = function(this: NetSocket) {
  this.destroy()
}

export class WebSocketUpgrades extends Effect.Service<WebSocketUpgrades>()("WebSocketUpgrades", {
  scoped: Effect.gen(function*() {
    // `ws` writes its own frames (pongs, close) whole and synchronously without compression, so
    // the feed's data frames, written to the socket directly, never interleave with them
    const wss = yield* Effect.acquireRelease(
      Effect.sync(() => new WebSocketServer({ noServer: true, perMessageDeflate: false })),
      (server) => Effect.async<void>((resume) => server.close(() => resume(Effect.void)))
    )
    const pending = new WeakMap<IncomingMessage, Pending>()

    /**
     * The 'upgrade' listener's part: the response the Effect app answers `request` with, unless
     * its handler upgrades it. After an HTTP answer the socket is ended (node's parser has left it).
     */
    const accept = (request: IncomingMessage, socket: Duplex, head: Buffer): ServerResponse | undefined => {
      socket.on("error", dropOnError)
      if (!(socket instanceof NetSocket)) {
        socket.destroy()
        return undefined
      }
      const response = new ServerResponse(request)
      response.shouldKeepAlive = false
      response.assignSocket(socket)
      const entry: Pending = { socket, head, response, upgraded: false }
      response.once("finish", () => {
        if (!entry.upgraded) socket.end()
      })
      pending.set(request, entry)
      return response
    }

    /** The `ws` handshake on a pending request's socket; the response lets go of the socket once it is done. */
    const handshake = (request: IncomingMessage, entry: Pending) =>
      Effect.async<WebSocket>((resume) => {
        // a refused handshake (`ws` answers 400 and destroys the socket) never calls back: the
        // socket's close ends the request's fiber (the response's 'close')
        wss.handleUpgrade(request, entry.socket, entry.head, (ws) => {
          entry.upgraded = true
          entry.response.detachSocket(entry.socket)
          resume(Effect.succeed(ws))
        })
      })

    const upgraded = (ws: WebSocket): UpgradedSocket => {
      // an invalid frame is followed by 'close'; with no 'error' listener it would end the process
      ws.on("error", () => undefined)
      return {
        close: (code, reason) => Effect.sync(() => ws.close(code, reason)),
        closed: Effect.async<Closed>((resume) => {
          if (ws.readyState === WebSocket.CLOSED) return resume(Effect.succeed({ code: 1006, reason: "" }))
          ws.once("close", (code, reason) => resume(Effect.succeed({ code, reason: reason.toString() })))
        })
      }
    }

    /**
     * Upgrades the request being handled to a WebSocket (the 101 is sent now); closed when the
     * scope (the request's) ends. Fails with NotAnUpgrade for a request that came as an ordinary one.
     */
    const upgrade: Effect.Effect<UpgradedSocket, NotAnUpgrade, HttpServerRequest.HttpServerRequest | Scope.Scope> = Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request) => {
        const incoming = NodeHttpServerRequest.toIncomingMessage(request)
        const entry = pending.get(incoming)
        if (entry === undefined || entry.upgraded) return Effect.fail(new NotAnUpgrade({ url: request.url }))
        return Effect.map(
          Effect.acquireRelease(handshake(incoming, entry), (ws) => Effect.sync(() => ws.close())),
          upgraded
        )
      }
    )

    return { accept, upgrade } as const
  })
}) {}
