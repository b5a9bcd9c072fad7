/**
 * The realtime catalogue feed (CONTRACT 3) on @effect/platform's request.upgrade. Authentication
 * and query errors are ordinary HTTP answers before the upgrade. Each client resumes from a dump's
 * cursor: changes after it are read from memory or the log, then the client joins the live set,
 * where each engine batch is serialised once and the same frame goes to every caught-up client.
 * A client whose socket backs up is closed with 4408 without slowing the others.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse, Socket } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Clock, Effect, Layer, Option, Queue } from "effect"
import * as Errors from "../Domain/Errors.js"
import { Authenticator } from "../Merchants/Authentication.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { CatalogueEngine, type EngineEvent } from "./Engine.js"

export const STREAM_PATH = "/api/v1/merchant/items/stream"
const HEARTBEAT_MS = 10_000
const CATCH_UP_BATCH = 1_000
/** Bytes a client may leave unread in its socket before it is a slow consumer. */
const SLOW_CONSUMER_BYTES = 8 * 1024 * 1024
/** Frames a client may have waiting to be written. */
const SLOW_CONSUMER_FRAMES = 1_000

export const CLOSE_RESET = 4409
export const CLOSE_SLOW_CONSUMER = 4408
export const CLOSE_GOING_AWAY = 1001

type ResetReason = "epoch_changed" | "cursor_expired" | "cursor_invalid"

interface Client {
  position: number
  lastSentAt: number
  readonly queue: Queue.Queue<string | Socket.CloseEvent>
  readonly buffered: () => number
}

const resetFrame = (reason: ResetReason) => `{"type":"reset","reason":"${reason}"}`
const helloFrame = (epoch: number, cursor: number) => `{"type":"hello","epoch":${epoch},"cursor":${cursor}}`
const heartbeatFrame = (epoch: number, cursor: number) => `{"type":"heartbeat","epoch":${epoch},"cursor":${cursor}}`
const changesFrame = (epoch: number, cursor: number, changes: ReadonlyArray<{ readonly json: string }>) => {
  let body = ""
  for (let i = 0; i < changes.length; i++) body += (i === 0 ? "" : ",") + changes[i]!.json
  return `{"type":"changes","epoch":${epoch},"cursor":${cursor},"changes":[${body}]}`
}

const DIGITS = /^\d{1,15}$/

export const StreamLive = Layer.unwrapScoped(Effect.gen(function*() {
  const engine = yield* CatalogueEngine
  const authenticator = yield* Authenticator
  const fibers = yield* Fibers
  const metrics = yield* Metrics
  const live = new Set<Client>()
  let connected = 0

  const slow = (client: Client) =>
    client.buffered() > SLOW_CONSUMER_BYTES || Option.getOrElse(client.queue.unsafeSize(), () => 0) > SLOW_CONSUMER_FRAMES

  const drop = (client: Client, close: Socket.CloseEvent, frame?: string) => {
    live.delete(client)
    if (frame !== undefined) Queue.unsafeOffer(client.queue, frame)
    Queue.unsafeOffer(client.queue, close)
  }

  // One listener for all clients: each batch becomes one frame, offered to every caught-up client.
  const onEngineEvent = (event: EngineEvent) => {
    if (event._tag === "reset") {
      for (const client of live) drop(client, new Socket.CloseEvent(CLOSE_RESET, "epoch_changed"), resetFrame("epoch_changed"))
      return
    }
    let frame: string | undefined
    for (const client of live) {
      if (client.position >= event.to) continue
      // A live client is always at the batch's start; anything else would be a gap: it resumes instead.
      if (client.position !== event.from - 1 || slow(client)) {
        drop(client, new Socket.CloseEvent(CLOSE_SLOW_CONSUMER, "slow consumer"))
        continue
      }
      frame ??= changesFrame(event.epoch, event.to, event.changes)
      client.position = event.to
      Queue.unsafeOffer(client.queue, frame)
    }
  }
  yield* engine.subscribe(onEngineEvent)

  yield* fibers.supervise("catalogue-stream-heartbeat", (beat) =>
    Effect.forever(Effect.gen(function*() {
      yield* Effect.sleep("1 second")
      const now = yield* Clock.currentTimeMillis
      for (const client of live) {
        if (now - client.lastSentAt >= HEARTBEAT_MS) {
          client.lastSentAt = now
          Queue.unsafeOffer(client.queue, heartbeatFrame(engine.epoch(), client.position))
        }
      }
      yield* beat
    })))

  const clientsGauge = metrics.gauge({ name: "websocket_clients", help: "Connected realtime feed clients" })
  yield* metrics.onScrape(Effect.sync(() => clientsGauge.set(connected)))

  /** What a resume point leads to: a reset reason, or the go-ahead. */
  const validate = (epoch: number, cursor: number) =>
    Effect.gen(function*() {
      if (epoch !== engine.epoch()) return Option.some<ResetReason>("epoch_changed")
      const log = yield* engine.logState
      if (log.epoch !== epoch) return Option.some<ResetReason>("epoch_changed")
      if (cursor > log.head) return Option.some<ResetReason>("cursor_invalid")
      if (cursor < log.prunedThrough) return Option.some<ResetReason>("cursor_expired")
      // another node may have accepted writes this one has not applied yet
      if (cursor > engine.cursor()) yield* engine.refresh
      return Option.none<ResetReason>()
    })

  /** Writes everything the client is owed, in order, until it closes or is closed. */
  const session = (client: Client, write: (chunk: string | Socket.CloseEvent) => Effect.Effect<void, Socket.SocketError>, epoch: number) =>
    Effect.gen(function*() {
      const send = (frame: string) =>
        Effect.zipRight(write(frame), Effect.map(Clock.currentTimeMillis, (now) => { client.lastSentAt = now }))
      const reset = yield* validate(epoch, client.position)
      if (Option.isSome(reset)) {
        yield* write(resetFrame(reset.value))
        return yield* write(new Socket.CloseEvent(CLOSE_RESET, reset.value))
      }
      yield* send(helloFrame(epoch, client.position))
      // catch up from memory or the log, then join the live set with no await in between
      for (;;) {
        const joined = yield* Effect.sync(() => {
          if (client.position !== engine.cursor()) return false
          live.add(client)
          return true
        })
        if (joined) break
        const changes = yield* engine.changesAfter(client.position, CATCH_UP_BATCH)
        if (Option.isNone(changes) || changes.value.length === 0) {
          if (Option.isSome(changes) && engine.epoch() === epoch) {
            yield* Effect.sleep("10 millis")
            continue
          }
          yield* write(resetFrame(engine.epoch() === epoch ? "cursor_expired" : "epoch_changed"))
          return yield* write(new Socket.CloseEvent(CLOSE_RESET, "resume point lost"))
        }
        const last = changes.value[changes.value.length - 1]!
        yield* send(changesFrame(epoch, last.seq, changes.value))
        client.position = last.seq
        if (client.buffered() > SLOW_CONSUMER_BYTES) return yield* write(new Socket.CloseEvent(CLOSE_SLOW_CONSUMER, "slow consumer"))
      }
      for (;;) {
        const next = yield* Queue.take(client.queue)
        if (typeof next !== "string") return yield* write(next)
        yield* send(next)
        if (client.buffered() > SLOW_CONSUMER_BYTES && live.has(client)) {
          live.delete(client)
          return yield* write(new Socket.CloseEvent(CLOSE_SLOW_CONSUMER, "slow consumer"))
        }
      }
    }).pipe(
      Effect.onInterrupt(() => Effect.ignore(write(new Socket.CloseEvent(CLOSE_GOING_AWAY, "server shutting down")))),
      Effect.ensuring(Effect.sync(() => live.delete(client)))
    )

  const handler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const authenticated = yield* authenticator.authenticate(
      request.headers["authorization"],
      "GET",
      Option.getOrElse(request.remoteAddress, () => "unknown")
    ).pipe(Effect.either)
    if (authenticated._tag === "Left") return Errors.errorResponse(authenticated.left.error, authenticated.left.headers)
    const headers = authenticated.right.headers
    const query = new URL(request.url, "http://x").searchParams
    const cursorText = query.get("cursor")
    const epochText = query.get("epoch")
    if (cursorText === null || epochText === null || !DIGITS.test(cursorText) || !DIGITS.test(epochText)) {
      return Errors.errorResponse(
        new Errors.InvalidQuery({ message: "cursor and epoch are required: pass X-Catalog-Cursor and X-Catalog-Epoch of a full dump" }),
        headers
      )
    }
    if ((request.headers["upgrade"] ?? "").toLowerCase() !== "websocket") {
      return Errors.errorResponse(new Errors.InvalidQuery({ message: "a WebSocket upgrade is required" }), headers)
    }
    const socket = yield* request.upgrade
    const write = yield* socket.writer
    const nodeSocket = NodeHttpServerRequest.toIncomingMessage(request).socket
    const client: Client = {
      position: Number(cursorText),
      lastSentAt: yield* Clock.currentTimeMillis,
      queue: yield* Queue.unbounded<string | Socket.CloseEvent>(),
      buffered: () => nodeSocket.writableLength
    }
    connected++
    yield* socket.runRaw(() => Effect.void, {
      onOpen: Effect.asVoid(Effect.fork(Effect.ignore(session(client, write, Number(epochText)))))
    }).pipe(
      Effect.catchAll((error) => Effect.logDebug("feed client closed", error)),
      Effect.ensuring(Effect.sync(() => {
        connected--
        live.delete(client)
      }))
    )
    return HttpServerResponse.empty()
  })

  return HttpApiBuilder.Router.use((router) => router.get(STREAM_PATH, handler))
}))
