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
    // our own deadline (below) decides; undici's must not come first
    headersTimeout: 0,
    bodyTimeout: 0,
    // a target that never accepts the connection is given up with the attempt
    connect: { lookup: guardedLookup(settings.resolve, settings.allowPrivateTargets), timeout: settings.timeoutMs }
  })

  const send = (input: AttemptInput, done: (outcome: Outcome) => void): () => void => {
    const target = checkUrl(input.url, settings.allowPrivateTargets)
    if (target instanceof PreflightRejected) {
      done({ kind: "pre-flight", status: 0, detail: target.message })
      return () => {}
    }
    const bodyBytes = Buffer.from(input.body, "utf8")
    const timestamp = String(Math.floor(Date.now() / 1000))
    let settled = false
    const settle = (outcome: Outcome) => {
      if (settled) return
      settled = true
      done(outcome)
    }
    // the request's own abort, once undici has put it on a connection (see onRequestStart)
    let controller: Dispatcher.DispatchController | undefined
    let aborted = false
    const abort = () => {
      aborted = true
      controller?.abort(new Error("aborted"))
    }
    // one deadline for the whole exchange: an answer's status after it is a timeout, and a body
    // still trickling in after a 2xx status loses its connection then
    const deadline = setTimeout(() => {
      settle({ kind: "timeout", status: 0, detail: `no answer within ${settings.timeoutMs} ms` })
      abort()
    }, settings.timeoutMs)
    const failed = (error: unknown) => {
      clearTimeout(deadline)
      settle(
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
        // (an informational 1xx is not the answer)
        if (status < 200) return
        settle({ kind: kindOf(status), status, detail: `HTTP ${status}` })
      },
      onResponseData(requestController, chunk) {
        // read a little of the answer and drop it; a receiver that sends more loses its connection
        read += chunk.length
        if (read > RESPONSE_BODY_CAP_BYTES) requestController.abort(new Error("answer too long"))
      },
      onResponseEnd() {
        clearTimeout(deadline)
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
    return () => {
      settle({ kind: "transport", status: 0, detail: "interrupted" })
      clearTimeout(deadline)
      abort()
    }
  }

  const attempt = (input: AttemptInput): Effect.Effect<Outcome> =>
    Effect.async<Outcome>((resume) => {
      const abort = send(input, (outcome) => resume(Effect.succeed(outcome)))
      return Effect.sync(abort)
    })

  const close = Effect.promise(() => agent.destroy().catch(() => undefined))

  return { send, attempt, close } as const
}
