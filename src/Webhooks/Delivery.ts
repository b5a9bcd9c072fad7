/**
 * One delivery attempt (spec 6, CONTRACT 4): a POST of the stored body, byte for byte, signed with
 * the merchant's current secret (and the previous one while a rotation overlaps). Only a 2xx within
 * the timeout is a delivery; redirects are not followed; the answer's body is read up to a small cap
 * and dropped. The connection's lookup hook checks the address connected to (Targets.ts).
 */
import { Effect } from "effect"
import { Agent, type Dispatcher } from "undici"
import { sign } from "./Signature.js"
import { checkUrl, guardedLookup, PreflightRejected, type Resolve } from "./Targets.js"

export const USER_AGENT = "merchant-purchasing-service-webhooks/1.0"
/** What is read of a receiver's answer before the connection is dropped. */
const RESPONSE_BODY_CAP_BYTES = 64 * 1024
/**
 * How long after the deadline undici's headers timeout may take to close a connection: its timers
 * advance half a second a tick, 2 to 3 ticks for a timeout, and every tick is late by what a busy
 * event loop makes it wait (a 2 s grace ran out on a 2-core machine at a load of 10).
 */
export const CLOSE_GRACE_MS = 5_000

export type OutcomeKind = "2xx" | "3xx" | "4xx" | "5xx" | "timeout" | "transport" | "pre-flight"

export interface Outcome {
  readonly kind: OutcomeKind
  /** The HTTP status, or 0 for a transport error, a timeout or a pre-flight rejection. */
  readonly status: number
  readonly detail: string
}

export interface AttemptInput {
  readonly url: string | null
  readonly eventId: string
  readonly eventType: string
  readonly body: string
  readonly secret: string
  readonly previousSecret: string | null
}

export interface DeliverySettings {
  readonly timeoutMs: number
  readonly allowPrivateTargets: boolean
  readonly resolve: Resolve
}

const kindOf = (status: number): OutcomeKind => status >= 200 && status < 300 ? "2xx" : status >= 500 ? "5xx" : status >= 400 ? "4xx" : "3xx"

/** The headers of one attempt; the timestamp is the attempt's own. */
export const attemptHeaders = (input: AttemptInput, timestamp: string, bodyBytes: Buffer): Record<string, string> => ({
  "content-type": "application/json",
  "content-length": String(bodyBytes.length),
  "user-agent": USER_AGENT,
  "x-event-id": input.eventId,
  "x-event": input.eventType,
  "x-timestamp": timestamp,
  "x-signature": sign(input.secret, timestamp, bodyBytes),
  ...(input.previousSecret !== null ? { "x-signature-previous": sign(input.previousSecret, timestamp, bodyBytes) } : {})
})

/**
 * Makes attempts on one undici Agent (keep-alive pools per origin; its client, driven through its
 * handler interface, costs about half of node:http's CPU per request, which at thousands of
 * attempts a second is much of the sender's work). The connection's `lookup` is the guarded one
 * (Targets.ts), so the address connected to is the address checked. An attempt never fails: every end is an Outcome. `send` is the attempt
 * as callbacks (the sender starts thousands a second: no fiber each); it calls `done` once and
 * returns what aborts it. `attempt` is the same as an Effect, interrupted by aborting.
 */
export const makeDelivery = (settings: DeliverySettings) => {
  const agent = new Agent({
    keepAliveTimeout: 30_000,
    // undici's own deadline for an answer's status closes the connection of an attempt that got
    // none (see `send`); a body is cut by our deadline
    headersTimeout: settings.timeoutMs,
    bodyTimeout: 0,
    // a target that never accepts the connection is given up with the attempt
    connect: { lookup: guardedLookup(settings.resolve, settings.allowPrivateTargets), timeout: settings.timeoutMs }
  })

  /**
   * `done` comes with an answer's status (its body, read on, is cut at the deadline) or, for an
   * attempt with no status within the timeout, only once its socket is closed: the sender then
   * starts the merchant's next attempt, and a receiver must not see more connections than the
   * merchant has attempts. Undici's own headers timeout (the same length, counted from the
   * request's start on its connection, in ticks: see CLOSE_GRACE_MS) closes that socket and fails
   * the request after the socket's 'close'. Aborting the request ourselves would close the socket
   * as well, but undici 7 then opens a new connection for the aborted request and leaves it idle
   * in its pool (nodejs/undici#5845): a socket beyond the merchant's limit at every timeout.
   * Should undici not have ended it CLOSE_GRACE_MS after the deadline (its connection was slow to
   * open, or a late answer trickles in), it is aborted then.
   */
  const send = (input: AttemptInput, done: (outcome: Outcome) => void): () => void => {
    const target = checkUrl(input.url, settings.allowPrivateTargets)
    if (target instanceof PreflightRejected) {
      done({ kind: "pre-flight", status: 0, detail: target.message })
      return () => {}
    }
    const bodyBytes = Buffer.from(input.body, "utf8")
    const timestamp = String(Math.floor(Date.now() / 1000))
    let ended = false
    const end = (outcome: Outcome) => {
      if (ended) return
      ended = true
      clearTimeout(deadline)
      clearTimeout(grace)
      done(outcome)
    }
    // the request's own abort, once undici has put it on a connection (see onRequestStart)
    let controller: Dispatcher.DispatchController | undefined
    let aborted = false
    /** Aborts the request (undici fails it at once, then destroys its socket before returning) and ends the attempt. */
    const abortWith = (outcome: Outcome) => {
      aborted = true
      controller?.abort(new Error(outcome.detail))
      end(outcome)
    }
    const timedOut: Outcome = { kind: "timeout", status: 0, detail: `no answer within ${settings.timeoutMs} ms` }
    let answered = false
    let late = false
    let grace: ReturnType<typeof setTimeout> | undefined
    // one deadline for the whole exchange: an answer's status after it is a timeout, and a body
    // still trickling in after a status loses its connection then
    const deadline = setTimeout(() => {
      if (answered) return abortWith(timedOut)
      late = true
      grace = setTimeout(() => abortWith(timedOut), CLOSE_GRACE_MS)
    }, settings.timeoutMs)
    const failed = (error: unknown) => {
      if (aborted) return
      if (late) return end(timedOut)
      end(
        error instanceof PreflightRejected
          ? { kind: "pre-flight", status: 0, detail: error.message }
          : { kind: "transport", status: 0, detail: error instanceof Error ? error.message.slice(0, 300) : "request failed" }
      )
    }
    let read = 0
    // undici's handler interface: no promise, stream or AbortController per attempt
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(requestController) {
        controller = requestController
        if (aborted) requestController.abort(new Error("aborted"))
      },
      onResponseStart(_, status) {
        // (an informational 1xx is not the answer; one after the deadline ends the attempt with its request)
        if (status < 200 || late) return
        answered = true
        end({ kind: kindOf(status), status, detail: `HTTP ${status}` })
      },
      onResponseData(requestController, chunk) {
        // read a little of the answer and drop it; a receiver that sends more loses its connection
        read += chunk.length
        if (read > RESPONSE_BODY_CAP_BYTES) requestController.abort(new Error("answer too long"))
      },
      onResponseEnd() {
        clearTimeout(deadline)
        if (late) end(timedOut)
      },
      onResponseError(_, error) {
        failed(error)
      }
    }
    try {
      agent.dispatch({
        origin: target.origin,
        path: target.pathname + target.search,
        method: "POST",
        headers: attemptHeaders(input, timestamp, bodyBytes),
        body: bodyBytes
      }, handler)
    } catch (error) {
      // undici refuses some requests as they are made (a header it cannot send, say)
      failed(error)
    }
    return () => abortWith({ kind: "transport", status: 0, detail: "interrupted" })
  }

  const attempt = (input: AttemptInput): Effect.Effect<Outcome> =>
    Effect.async<Outcome>((resume) => {
      const abort = send(input, (outcome) => resume(Effect.succeed(outcome)))
      return Effect.sync(abort)
    })

  const close = Effect.promise(() => agent.destroy().catch(() => undefined))

  return { send, attempt, close } as const
}
