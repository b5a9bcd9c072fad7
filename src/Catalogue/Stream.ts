/**
 * The realtime catalogue feed (CONTRACT 3), upgraded by WebSocketUpgrades.ts. Authentication
 * and query errors are ordinary HTTP answers before the upgrade. Each client resumes from a dump's
 * cursor: changes after it are read from memory or the log, then the client joins the live set,
 * where each engine batch is serialised once, framed once, and the same bytes are written to every
 * caught-up client's socket. A client whose socket backs up is closed with 4408 without slowing
 * the others; one whose key is revoked or merchant blocked, with 1008.
 *
 * Data frames are written to the upgraded socket directly: the WebSocket server runs without
 * permessage-deflate, so `ws` writes each of its own frames (pongs, close) synchronously and whole,
 * and frames never interleave. Closing goes through `ws`, which does the close handshake.
 *
 * The connected clients, their close codes and their shutdown are in FeedClients.ts.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse, Socket } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, Layer, Option, Queue } from "effect"
import { API_PREFIX } from "../Api.js"
import * as Errors from "../Domain/Errors.js"
import { Authenticator } from "../Merchants/Authentication.js"
import { bearerToken } from "../Merchants/Keys.js"
import { Merchants } from "../Merchants/Merchants.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { WebSocketUpgrades } from "../WebSocketUpgrades.js"
import { CatalogueEngine, type EngineEvent } from "./Engine.js"
import { type Client, CLOSE_INTERNAL_ERROR, CLOSE_POLICY, CLOSE_RESET, CLOSE_SLOW_CONSUMER, FeedClients } from "./FeedClients.js"

export const STREAM_PATH = `${API_PREFIX}/items/stream`
const HEARTBEAT_MS = 10_000
const CATCH_UP_BATCH = 1_000
/** Bytes a client may leave unread in its socket before it is a slow consumer. */
const SLOW_CONSUMER_BYTES = 8 * 1024 * 1024

type ResetReason = "epoch_changed" | "cursor_expired" | "cursor_invalid"

/** One unfragmented, unmasked text frame (RFC 6455 section 5.2) carrying `text`. */
export const textFrame = (text: string): Buffer => {
  const payload = Buffer.from(text)
  const n = payload.length
  const header = n < 126 ? Buffer.alloc(2) : n < 65_536 ? Buffer.alloc(4) : Buffer.alloc(10)
  header[0] = 0x81
  if (n < 126) header[1] = n
  else if (n < 65_536) {
    header[1] = 126
    header.writeUInt16BE(n, 2)
  } else {
    header[1] = 127
    header.writeBigUInt64BE(BigInt(n), 2)
  }
  return Buffer.concat([header, payload])
}

/** Writes a prepared frame; false if the socket is gone or closing. */
const sendFrame = (client: Client, frame: Buffer) => {
  if (client.closed || client.socket.destroyed || !client.socket.writable) return false
  client.socket.write(frame)
  client.lastSentAt = Date.now()
  return true
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
  const merchants = yield* Merchants
  const fibers = yield* Fibers
  const metrics = yield* Metrics
  const feedClients = yield* FeedClients
  const upgrades = yield* WebSocketUpgrades
  const { connected } = feedClients
  const live = new Set<Client>()

  const slow = (client: Client) => client.socket.writableLength > SLOW_CONSUMER_BYTES

  const drop = (client: Client, close: Socket.CloseEvent, frame?: Buffer) => {
    live.delete(client)
    if (frame !== undefined) sendFrame(client, frame)
    Queue.unsafeOffer(client.closes, close)
  }

  // One listener for all clients: each batch becomes one frame, written to every caught-up client.
  const onEngineEvent = (event: EngineEvent) => {
    if (event._tag === "reset") {
      const frame = textFrame(resetFrame("epoch_changed"))
      for (const client of live) drop(client, new Socket.CloseEvent(CLOSE_RESET, "epoch_changed"), frame)
      return
    }
    if (event._tag === "advanced") {
      for (const client of live) if (client.position < event.cursor) drop(client, new Socket.CloseEvent(CLOSE_SLOW_CONSUMER, "slow consumer"))
      return
    }
    let frame: Buffer | undefined
    for (const client of live) {
      if (client.position >= event.to) continue
      // A live client is always at the batch's start; anything else would be a gap: it resumes instead.
      if (client.position !== event.from - 1 || slow(client)) {
        drop(client, new Socket.CloseEvent(CLOSE_SLOW_CONSUMER, "slow consumer"))
        continue
      }
      frame ??= textFrame(changesFrame(event.epoch, event.to, event.changes))
      client.position = event.to
      if (!sendFrame(client, frame)) live.delete(client)
    }
  }
  yield* engine.subscribe(onEngineEvent)

  yield* fibers.supervise("catalogue-stream-heartbeat", (beat) =>
    Effect.forever(Effect.gen(function*() {
      yield* Effect.sleep("1 second")
      const now = Date.now()
      const frames = new Map<number, Buffer>()
      for (const client of live) {
        if (now - client.lastSentAt < HEARTBEAT_MS) continue
        let frame = frames.get(client.position)
        if (frame === undefined) frames.set(client.position, frame = textFrame(heartbeatFrame(engine.epoch(), client.position)))
        if (!sendFrame(client, frame)) live.delete(client)
      }
      yield* beat
    })))

  // A revoked key or a blocked merchant ends its open feeds too, not only its next requests (spec
  // 5.3: a regenerated key is revoked immediately; CONTRACT 2: blocked means no merchant endpoint).
  const rechecks = yield* Queue.unbounded<string | undefined>()
  yield* merchants.onAuthChange((merchantId) => rechecks.unsafeOffer(merchantId))
  yield* fibers.supervise("catalogue-stream-auth", (beat) =>
    Effect.forever(Effect.gen(function*() {
      const merchantId = yield* Queue.take(rechecks)
      for (const client of connected) {
        if (merchantId !== undefined && client.merchantId !== merchantId) continue
        const found = yield* merchants.authenticate(client.key)
        const refusal = Option.isNone(found) ? "api key revoked" : found.value.status === "blocked" ? "merchant blocked" : undefined
        if (refusal === undefined) continue
        live.delete(client)
        yield* client.close(new Socket.CloseEvent(CLOSE_POLICY, refusal))
      }
      yield* beat
    })))

  const clientsGauge = metrics.gauge({ name: "websocket_clients", help: "Connected realtime feed clients" })
  yield* metrics.onScrape(Effect.sync(() => clientsGauge.set(connected.size)))

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

  /** Sends what the client is owed until it joins the live set, then waits to close it. */
  const session = (client: Client, write: (chunk: Socket.CloseEvent) => Effect.Effect<void, Socket.SocketError>, epoch: number) =>
    Effect.gen(function*() {
      const send = (text: string) => Effect.sync(() => sendFrame(client, textFrame(text)))
      yield* engine.awaitLoaded
      const reset = yield* validate(epoch, client.position)
      if (Option.isSome(reset)) {
        yield* send(resetFrame(reset.value))
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
          yield* send(resetFrame(engine.epoch() === epoch ? "cursor_expired" : "epoch_changed"))
          return yield* write(new Socket.CloseEvent(CLOSE_RESET, "resume point lost"))
        }
        const last = changes.value[changes.value.length - 1]!
        yield* send(changesFrame(epoch, last.seq, changes.value))
        client.position = last.seq
        if (slow(client)) return yield* write(new Socket.CloseEvent(CLOSE_SLOW_CONSUMER, "slow consumer"))
      }
      // live: the engine listener writes the frames; this fiber only closes
      return yield* write(yield* Queue.take(client.closes))
    }).pipe(
      Effect.ensuring(Effect.sync(() => live.delete(client)))
    )

  const handler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const authenticated = yield* authenticator.authenticate(
      request.headers["authorization"],
      "GET",
      Option.getOrElse(request.remoteAddress, () => "unknown")
    )
    if (authenticated._tag === "Refused") return Errors.errorResponse(authenticated.error, authenticated.headers)
    const headers = authenticated.headers
    const query = new URL(request.url, "http://x").searchParams
    const cursorText = query.get("cursor")
    const epochText = query.get("epoch")
    // a repeated one is refused, as on the REST routes: which of them was meant is anyone's guess
    const repeated = query.getAll("cursor").length > 1 || query.getAll("epoch").length > 1
    if (cursorText === null || epochText === null || repeated || !DIGITS.test(cursorText) || !DIGITS.test(epochText)) {
      return Errors.errorResponse(
        new Errors.InvalidQuery({ message: "cursor and epoch are required, once each: pass X-Catalog-Cursor and X-Catalog-Epoch of a full dump" }),
        headers
      )
    }
    // what `ws` would refuse with a bare 400 of its own, refused here in the Error shape
    const notAnUpgrade = Errors.errorResponse(new Errors.InvalidQuery({ message: "a WebSocket upgrade (RFC 6455, version 13) is required" }), headers)
    if (
      (request.headers["upgrade"] ?? "").toLowerCase() !== "websocket" || request.headers["sec-websocket-version"] !== "13" ||
      !/^[A-Za-z0-9+/]{22}==$/.test(request.headers["sec-websocket-key"] ?? "")
    ) {
      return notAnUpgrade
    }
    const upgrade = yield* Effect.either(upgrades.upgrade)
    if (upgrade._tag === "Left") return notAnUpgrade
    const connection = upgrade.right
    const write = (event: Socket.CloseEvent) => connection.close(event.code, event.reason ?? "")
    const client: Client = {
      merchantId: authenticated.merchant.id,
      key: bearerToken(request.headers["authorization"]),
      position: Number(cursorText),
      lastSentAt: Date.now(),
      socket: NodeHttpServerRequest.toIncomingMessage(request).socket,
      closes: yield* Queue.unbounded<Socket.CloseEvent>(),
      close: (event) =>
        Effect.suspend(() => {
          client.closed = true
          live.delete(client)
          return write(event).pipe(Effect.timeout("1 second"), Effect.ignore)
        }),
      closed: false
    }
    // a session that fails (the database is out of reach) closes, so the client resumes from its
    // cursor, instead of leaving it connected and told nothing
    const run = session(client, write, Number(epochText)).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Effect.void : Effect.zipRight(
          Effect.logWarning("feed session failed; closing it with 1011", cause),
          Effect.ignore(write(new Socket.CloseEvent(CLOSE_INTERNAL_ERROR, "internal error: resume from your last cursor")))
        )
      )
    )
    connected.add(client)
    // upgraded once shutdown began: going away at once; the session fiber ends with this one
    yield* Effect.zipRight(feedClients.closing() ? client.close(feedClients.goingAway()) : Effect.fork(run), connection.closed).pipe(
      Effect.tap((closed) => Effect.logDebug("feed client closed", closed)),
      Effect.ensuring(Effect.sync(() => {
        connected.delete(client)
        live.delete(client)
      }))
    )
    return HttpServerResponse.empty()
  })

  return HttpApiBuilder.Router.use((router) => router.get(STREAM_PATH, handler))
}))
