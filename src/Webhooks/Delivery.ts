/**
 * One delivery attempt (spec 6, CONTRACT 4): a POST of the stored body, byte for byte, signed with
 * the merchant's current secret (and the previous one while a rotation overlaps). Only a 2xx within
 * the timeout is a delivery; redirects are not followed; the answer's body is read up to a small cap
 * and dropped. node:http directly, for the lookup hook that checks the address connected to
 * (Targets.ts) and for exact control of what is sent.
 */
import { Effect } from "effect"
import * as http from "node:http"
import * as https from "node:https"
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
export const attemptHeaders = (input: AttemptInput, timestamp: string, bodyBytes: Buffer): http.OutgoingHttpHeaders => ({
  "content-type": "application/json",
  "content-length": bodyBytes.length,
  "user-agent": USER_AGENT,
  "x-event-id": input.eventId,
  "x-event": input.eventType,
  "x-timestamp": timestamp,
  "x-signature": sign(input.secret, timestamp, bodyBytes),
  ...(input.previousSecret !== null ? { "x-signature-previous": sign(input.previousSecret, timestamp, bodyBytes) } : {})
})

/**
 * Makes attempts with keep-alive agents of their own. An attempt never fails: every end is an
 * Outcome. `send` is the attempt as node callbacks (the sender starts thousands a second: no fiber
 * each); it calls `done` once and returns what aborts it. `attempt` is the same as an Effect,
 * interrupted by aborting.
 */
export const makeDelivery = (settings: DeliverySettings) => {
  const lookup = guardedLookup(settings.resolve, settings.allowPrivateTargets)
  const agents = {
    "http:": new http.Agent({ keepAlive: true, maxFreeSockets: 64, timeout: 30_000 }),
    "https:": new https.Agent({ keepAlive: true, maxFreeSockets: 64, timeout: 30_000 })
  }

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
    const transport = target.protocol === "https:" ? https : http
    let request: http.ClientRequest
    try {
      request = transport.request(target, {
        method: "POST",
        agent: agents[target.protocol === "https:" ? "https:" : "http:"],
        lookup,
        headers: attemptHeaders(input, timestamp, bodyBytes)
      }, onResponse)
    } catch (error) {
      // node refuses some URLs as the request is made (a host it cannot send, say)
      settle({ kind: "transport", status: 0, detail: error instanceof Error ? error.message.slice(0, 300) : "request refused" })
      return () => {}
    }
    function onResponse(response: http.IncomingMessage) {
      const status = response.statusCode ?? 0
      settle({ kind: kindOf(status), status, detail: `HTTP ${status}` })
      // read a little of the answer and drop it; a receiver that sends more loses its connection
      let read = 0
      response.on("data", (chunk: Buffer) => {
        read += chunk.length
        if (read > RESPONSE_BODY_CAP_BYTES) response.destroy()
      })
      response.on("error", () => {})
    }
    // one deadline for the whole exchange: an answer's status after it is a timeout, and a body
    // still trickling in after a 2xx status loses its connection then
    const deadline = setTimeout(() => {
      settle({ kind: "timeout", status: 0, detail: `no answer within ${settings.timeoutMs} ms` })
      request.destroy()
    }, settings.timeoutMs)
    request.on("error", (error) =>
      settle(
        error instanceof PreflightRejected
          ? { kind: "pre-flight", status: 0, detail: error.message }
          : { kind: "transport", status: 0, detail: error.message.slice(0, 300) }
      ))
    request.on("close", () => clearTimeout(deadline))
    request.end(bodyBytes)
    return () => {
      settle({ kind: "transport", status: 0, detail: "interrupted" })
      request.destroy()
    }
  }

  const attempt = (input: AttemptInput): Effect.Effect<Outcome> =>
    Effect.async<Outcome>((resume) => {
      const abort = send(input, (outcome) => resume(Effect.succeed(outcome)))
      return Effect.sync(abort)
    })

  const close = Effect.sync(() => {
    agents["http:"].destroy()
    agents["https:"].destroy()
  })

  return { send, attempt, close } as const
}
