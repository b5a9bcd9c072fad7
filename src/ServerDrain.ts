/**
 * The drain of a node server at shutdown, as functions its owner calls: `beginDrain` (a balancer
 * is told; connections are still taken) and `closeListener` (the listener alone closes; answers
 * say `Connection: close` from then on, idle connections are closed, what is still open when the
 * grace runs out is cut). The server's request listener calls `admit` and `track` per request.
 *
 * Closing waits for every open connection. Node closes those idle when it begins; one busy then
 * stayed open once idle (a kept-alive client's next request went unanswered until the grace ran
 * out, and the process waited for it): every answer not yet begun says `Connection: close` (node
 * then closes its connection), and idle ones are closed as they come. One client that stalls (a
 * body never finished, a download never read) held shutdown for good: what is still open when the
 * grace (counted from the drain's beginning) runs out is cut.
 */
import type { Server } from "node:http"
import { Server as NetServer } from "node:net"
import { makeOpenResponses, type SlottedResponse } from "./OpenResponses.js"

/** While the server closes, how often connections that became idle are closed. */
const CLOSE_IDLE_EVERY_MS = 100
/** While the server closes, how often what it still waits for is told (a long drain is not silent). */
const DRAIN_PROGRESS_EVERY_MS = 2_000

/** What a closing server still waits for. */
export interface DrainProgress {
  /** Requests received and not yet answered. */
  readonly requests: number
  /** Connections still open (idle ones are closed as they come). */
  readonly connections: number
  readonly elapsedSeconds: number
  /** True once the server has closed. */
  readonly done: boolean
}

export interface DrainOptions {
  readonly shutdownGraceSeconds: number
  /** Called as the drain begins (shutdown). */
  readonly onClosing?: (() => void) | undefined
  /** Called every DRAIN_PROGRESS_EVERY_MS while it drains, and once it has closed. */
  readonly onDrainProgress?: ((progress: DrainProgress) => void) | undefined
}

export const makeServerDrain = (server: Server, options: DrainOptions) => {
  /** True once the listener is closing: every answer from then on closes its connection. */
  let listenerClosed = false
  const unanswered = makeOpenResponses()
  let drainStarted: number | undefined
  let progress: ReturnType<typeof setInterval> | undefined
  let cut: ReturnType<typeof setTimeout> | undefined
  const tell = (done: boolean) =>
    server.getConnections((_, connections) =>
      options.onDrainProgress?.({
        requests: unanswered.size(),
        connections: done ? 0 : connections,
        elapsedSeconds: Math.round((Date.now() - (drainStarted ?? Date.now())) / 100) / 10,
        done
      })
    )
  const closeWhenAnswered = () =>
    unanswered.forEach((response) => {
      if (!response.headersSent) response.shouldKeepAlive = false
    })

  /**
   * The drain begins: `onClosing`, its progress told, what is still open at the grace's end cut,
   * and the answers under way say `Connection: close` (their clients learn at once that this node
   * is going). A request that comes while it still listens is answered as usual: were every such
   * answer to close its connection, a busy client would connect anew for each request, and one
   * connecting just as the listener closes would meet a reset.
   */
  const beginDrain = () => {
    if (drainStarted !== undefined) return
    drainStarted = Date.now()
    options.onClosing?.()
    closeWhenAnswered()
    cut = setTimeout(() => server.closeAllConnections(), options.shutdownGraceSeconds * 1000).unref()
    progress = setInterval(() => tell(false), DRAIN_PROGRESS_EVERY_MS).unref()
  }

  /**
   * Closes the listener alone, and calls back once every connection has closed. net.Server's own
   * `close`, called on the http server: http.Server's would also close at once every connection
   * between two requests, where a kept-alive client's next request may already be on its way (it
   * met a reset), and node has no other public way to stop listening. Such a client's next answer
   * says `Connection: close` instead; a connection still idle `idleAfterMs` later is closed.
   */
  const closeListener = (idleAfterMs: number, callback: (error?: Error) => void) => {
    beginDrain()
    listenerClosed = true
    closeWhenAnswered()
    let idle: ReturnType<typeof setInterval> | undefined
    const idleFrom = setTimeout(() => {
      idle = setInterval(() => server.closeIdleConnections(), CLOSE_IDLE_EVERY_MS).unref()
    }, idleAfterMs).unref()
    NetServer.prototype.close.call(server, (error?: Error) => {
      clearTimeout(idleFrom)
      clearInterval(idle)
      clearInterval(progress)
      clearTimeout(cut)
      tell(true)
      callback(error)
    })
  }

  return {
    /** Per request, before it is handled: once the listener is closing, its answer closes the connection. */
    admit: (response: SlottedResponse) => {
      if (listenerClosed) response.shouldKeepAlive = false
    },
    /**
     * Per request, once a handler has it: an answer not yet finished is waited for (one the fast
     * handler has already ended is not: its 'close' listener cost about 1 µs of such a request).
     */
    track: (response: SlottedResponse) => {
      if (!listenerClosed && !response.writableEnded) unanswered.add(response)
    },
    beginDrain,
    closeListener
  } as const
}

export type ServerDrain = ReturnType<typeof makeServerDrain>
