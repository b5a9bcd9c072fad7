/**
 * `webhook ...`: the support procedures (replay one event, recover a merchant's failed events) and
 * `webhook listen`, a local receiver for merchants' engineers that verifies each delivery as a
 * receiver must (signature, 300 s window) and prints it.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Redacted } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { EventReplayed, EventsRecovered, RecoverWebhookEvents } from "../Ops/AdminApi.js"
import { verify } from "../Webhooks/Signature.js"
import { call, checked, CliFailure, connection, connectionOptions, report } from "./Admin.js"
import { merchantIdArg } from "./Merchant.js"

const webhookReplay = Command.make("replay", {
  ...connectionOptions,
  eventId: Args.text({ name: "EVENT_ID" }).pipe(Args.withDescription("the event_id to deliver again"))
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, (client) => client.webhooks.replayEvent({ path: { id: flags.eventId } }))
    yield* report(conn, answer, EventReplayed, () => `replay of webhook event ${flags.eventId} queued (same event_id; delivery_attempts grows)`)
  })).pipe(Command.withDescription("deliver a webhook event again (support replay)"))

const webhookRecover = Command.make("recover", {
  ...connectionOptions,
  merchantId: merchantIdArg,
  since: Options.text("since").pipe(
    Options.withDescription("ISO 8601 date-time with a time zone: failed events created at or after it are sent again")
  )
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const payload = yield* checked(RecoverWebhookEvents, { since: flags.since })
    const answer = yield* call(conn, (client) => client.webhooks.recoverEvents({ path: { id: flags.merchantId }, payload }))
    yield* report(conn, answer, EventsRecovered, (body) =>
      `${body.requeued} failed webhook event${body.requeued === 1 ? "" : "s"} of merchant ${flags.merchantId} queued again (same event ids)`)
  })).pipe(Command.withDescription("send again every failed webhook event of a merchant created since a time"))

const BODY_MAX_BYTES = 1024 * 1024

/** What `webhook listen` prints of a delivery: one line, or the body with --json. */
const describe = (body: string, eventIdHeader: string | undefined, verdict: string) => {
  let parsed: { event_id?: unknown; event_type?: unknown; data?: { purchase_id?: unknown } } = {}
  try {
    parsed = JSON.parse(body)
  } catch {
    // an unreadable body is reported by its verdict
  }
  const order = typeof parsed.data?.purchase_id === "string" ? parsed.data.purchase_id : "-"
  return `${new Date().toISOString()} ${String(parsed.event_id ?? eventIdHeader ?? "-")} ${String(parsed.event_type ?? "-")} order=${order} ${verdict}`
}

const webhookListen = Command.make("listen", {
  port: Options.integer("port").pipe(Options.withDescription("port to listen on (default: 4000)"), Options.withDefault(4000)),
  host: Options.text("host").pipe(Options.withDescription("address to listen on (default: 127.0.0.1)"), Options.withDefault("127.0.0.1")),
  secret: Options.redacted("secret").pipe(Options.withDescription("the merchant's webhook secret (whsec_...)")),
  json: Options.boolean("json").pipe(Options.withDescription("also print each delivery's body"))
}, (flags) =>
  Effect.async<never, CliFailure>((resume) => {
    const secret = Redacted.value(flags.secret)
    const handle = (request: IncomingMessage, response: ServerResponse) => {
      const chunks: Array<Buffer> = []
      let size = 0
      request.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size <= BODY_MAX_BYTES) chunks.push(chunk)
      })
      request.on("end", () => {
        const body = Buffer.concat(chunks)
        const header = (name: string) => {
          const value = request.headers[name]
          return Array.isArray(value) ? value[0] : value
        }
        const verdict = size > BODY_MAX_BYTES ? "too-large" : verify({
          secret,
          body,
          timestamp: header("x-timestamp"),
          signatures: [header("x-signature"), header("x-signature-previous")],
          nowSeconds: Math.floor(Date.now() / 1000)
        })
        const text = body.toString("utf8")
        process.stdout.write(describe(text, header("x-event-id"), verdict) + "\n" + (flags.json ? text + "\n" : ""))
        response.writeHead(verdict === "valid" ? 200 : 400, { "content-type": "text/plain" })
        response.end(verdict === "valid" ? "ok\n" : `${verdict}\n`)
      })
    }
    const server = createServer(handle)
    server.once("error", (error) => resume(Effect.fail(new CliFailure({ message: `cannot listen on ${flags.host}:${flags.port}: ${error.message}` }))))
    server.listen(flags.port, flags.host, () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : flags.port
      process.stdout.write(`listening for webhooks on http://${flags.host}:${port}/ (Ctrl-C to stop)\n`)
    })
    return Effect.sync(() => {
      server.close()
    })
  })).pipe(Command.withDescription("a local webhook receiver: verifies each delivery's signature and timestamp and prints it"))

export const webhook = Command.make("webhook").pipe(
  Command.withDescription("webhooks"),
  Command.withSubcommands([webhookReplay, webhookRecover, webhookListen])
)
