/**
 * bench/stream bare baseline: a plain `ws` WebSocketServer (noServer, on a node:http server, as
 * @effect/platform-node sets it up) that replays the frames the service sent, recorded by one
 * client, to every connected client at the recorded timing: the same bytes, the same sizes, the
 * same rate. A client sees `hello` then the same `changes` frames as from the service.
 *
 *   FRAMES=<file prefix> PORT=<port> SEND=buffer|string node bench/stream/bare-server.mjs   (forked, IPC)
 *
 * SEND=buffer (default): each frame is encoded once and the same Buffer is sent to every client,
 * the usual way to broadcast with `ws`. SEND=string: the frame is a string and `ws` encodes it for
 * each client, which is what the service's socket writer does (ws.send(string)).
 * A client with more than 8 MiB unsent is closed with 4408, like the service's slow-consumer rule.
 * Messages: replay {} -> {origins: [[from, to, broadcastStartMs], ...]}; count -> {clients}.
 */
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { WebSocketServer } from "ws"

const now = () => performance.timeOrigin + performance.now()
const SLOW_CONSUMER_BYTES = 8 * 1024 * 1024
const PATH = "/api/v1/merchant/items/stream"

const prefix = process.env.FRAMES
const mode = process.env.SEND ?? "buffer"
const meta = JSON.parse(readFileSync(prefix + ".json", "utf8"))
const bin = readFileSync(prefix + ".bin")
let offset = 0
const frames = meta.frames.map((f) => {
  const data = bin.subarray(offset, offset + f.length)
  offset += f.length
  return { ...f, payload: mode === "string" ? data.toString("utf8") : Buffer.from(data) }
})
const epoch = meta.epoch
const startCursor = frames[0].from - 1

const live = new Set()
const wss = new WebSocketServer({ noServer: true })
const server = createServer((req, res) => {
  res.statusCode = 404
  res.end()
})
server.on("upgrade", (req, socket, head) => {
  const url = new URL(req.url, "http://x")
  if (url.pathname !== PATH || !req.headers.authorization) {
    socket.end("HTTP/1.1 401 Unauthorized\r\n\r\n")
    return
  }
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.send(`{"type":"hello","epoch":${epoch},"cursor":${startCursor}}`)
    live.add(ws)
    ws.on("close", () => live.delete(ws))
    ws.on("error", () => live.delete(ws))
  })
})

const replay = async () => {
  const origins = []
  const t0 = now()
  for (const f of frames) {
    const wait = t0 + f.offsetMs - now()
    if (wait > 1) await new Promise((r) => setTimeout(r, wait))
    const at = now()
    for (const ws of live) {
      if (ws.bufferedAmount > SLOW_CONSUMER_BYTES) {
        live.delete(ws)
        ws.close(4408, "slow consumer")
        continue
      }
      ws.send(f.payload, { binary: false })
    }
    origins.push([f.from, f.to, at])
  }
  return { origins }
}

server.listen(Number(process.env.PORT), "127.0.0.1", () => {
  process.send({ ready: true, frames: frames.length, startCursor })
})
process.on("message", async (msg) => {
  try {
    if (msg.cmd === "replay") process.send({ replyTo: msg.id, ...(await replay()) })
    else if (msg.cmd === "count") process.send({ replyTo: msg.id, clients: live.size })
  } catch (e) {
    process.send({ replyTo: msg.id, error: String(e?.stack ?? e) })
  }
})
