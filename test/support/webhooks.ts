/**
 * A local webhook receiver for the tests: a real HTTP server on 127.0.0.1 that records every
 * request it gets (headers, raw body bytes) and answers each path as told: `/ok`, `/fail/<status>`,
 * `/hang` (never answers until `releaseHung`), `/reset` (destroys the connection),
 * `/redirect` (302 to `/ok/redirected`), `/slow/<ms>` (200 after that long), `/hang-once` (the first
 * request to each such path hangs, later ones get 200).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { verify } from "../../src/Webhooks/Signature.js"
import { pollUntil } from "./polling.js"

export interface Delivery {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  readonly receivedAt: number
}

export interface Receiver {
  readonly url: (path: string) => string
  readonly deliveries: Array<Delivery>
  /** Requests to /hang that are still open. */
  readonly hung: () => number
  /** The most hung requests open at once so far, by path prefix. */
  readonly maxHung: () => number
  /** Connections accepted so far (a pre-flight refusal must never open one). */
  readonly connections: () => number
  /** The most connections open at once so far (one is over when its peer ends it or it closes). */
  readonly maxOpenConnections: () => number
  readonly releaseHung: () => void
  readonly close: () => Promise<void>
}

const header = (headers: IncomingHttpHeaders, name: string) => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

export const startReceiver = async (): Promise<Receiver> => {
  const deliveries: Array<Delivery> = []
  const hung = new Set<ServerResponse>()
  const sockets = new Set<Socket>()
  const hungOnce = new Set<string>()
  let maxHung = 0
  let connections = 0
  let openConnections = 0
  let maxOpenConnections = 0
  const server: Server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const path = request.url ?? "/"
      deliveries.push({ path, headers: request.headers, body: Buffer.concat(chunks), receivedAt: Date.now() })
      const failing = path.match(/^\/fail\/(\d{3})/)
      const slow = path.match(/^\/slow\/(\d+)/)
      const hangs = path.startsWith("/hang-once") ? !hungOnce.has(path) : path.startsWith("/hang")
      if (path.startsWith("/hang-once")) hungOnce.add(path)
      if (hangs) {
        hung.add(response)
        maxHung = Math.max(maxHung, hung.size)
        response.on("close", () => hung.delete(response))
      } else if (path.startsWith("/reset")) {
        request.socket.destroy()
      } else if (path.startsWith("/redirect")) {
        response.writeHead(302, { location: "/ok/redirected" }).end()
      } else if (failing !== null) {
        response.writeHead(Number(failing[1])).end("no")
      } else if (slow !== null) {
        setTimeout(() => response.writeHead(200).end("ok"), Number(slow[1]))
      } else {
        response.writeHead(200).end("ok")
      }
    })
  })
  server.on("connection", (socket: Socket) => {
    connections += 1
    openConnections += 1
    maxOpenConnections = Math.max(maxOpenConnections, openConnections)
    sockets.add(socket)
    let open = true
    const over = () => {
      if (open) openConnections -= 1
      open = false
    }
    socket.once("end", over)
    socket.on("close", () => {
      over()
      sockets.delete(socket)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  const releaseHung = () => {
    for (const response of hung) response.destroy()
    hung.clear()
  }
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    deliveries,
    hung: () => hung.size,
    maxHung: () => maxHung,
    connections: () => connections,
    maxOpenConnections: () => maxOpenConnections,
    releaseHung,
    close: () =>
      new Promise<void>((resolve) => {
        releaseHung()
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}

/** The parsed body of a delivery. */
export const bodyOf = (delivery: Delivery): { event_id: string; event_type: string; created_at: string; data: Record<string, unknown> } =>
  JSON.parse(delivery.body.toString("utf8"))

/**
 * The delivery's signature check, as a receiver does it, with `secret`: now, or (`atArrival`) at
 * the moment it arrived, as a receiver that checks each delivery as it comes.
 */
export const verdictOf = (delivery: Delivery, secret: string, signatureHeader = "x-signature", atArrival = false) =>
  verify({
    secret,
    body: delivery.body,
    timestamp: header(delivery.headers, "x-timestamp"),
    signatures: [header(delivery.headers, signatureHeader)],
    nowSeconds: Math.floor((atArrival ? delivery.receivedAt : Date.now()) / 1000)
  })

export const headerOf = header

/** Deliveries to `path` so far. */
export const deliveriesTo = (receiver: Receiver, path: string) => receiver.deliveries.filter((d) => d.path === path)

/** Waits until `path` has received at least `count` deliveries. */
export const awaitDeliveries = (receiver: Receiver, path: string, count: number, timeoutMs = 60_000) =>
  pollUntil(
    `${count} deliveries to ${path}`,
    async () => {
      const got = deliveriesTo(receiver, path)
      return got.length >= count ? got : undefined
    },
    timeoutMs,
    20
  )
