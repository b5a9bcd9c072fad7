/**
 * A client of the realtime catalogue feed (CONTRACT 3) that records every message and the close,
 * the changes applied on top of a dump, and raw HTTP for the dump's bytes as sent. No test runner
 * here: the chaos command (chaos/) uses it too; the feed's assertions are in catalogue.ts.
 */
import * as http from "node:http"
import WebSocket from "ws"
import type { Item } from "./catalogue.js"
import type { RunningServer } from "./server.js"

// ---- raw HTTP (the dump's bytes as sent) --------------------------------------------------------

export interface RawResponse {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: Buffer
}

export const rawGet = (url: string, headers: Record<string, string>): Promise<RawResponse> => rawRequest("GET", url, headers)

export const rawRequest = (method: string, url: string, headers: Record<string, string>): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })

// ---- the realtime feed ---------------------------------------------------------------------------

export interface Change {
  readonly op: "upsert" | "remove"
  readonly item?: Item
  readonly id?: string
}

export const feedUrl = (server: RunningServer, query: string) => `${server.baseUrl.replace(/^http/, "ws")}/api/v1/merchant/items/stream${query}`

/** A feed client that records every message and the close. */
export class Feed {
  readonly messages: Array<any> = []
  closed: { code: number; reason: string } | undefined
  private waiters: Array<() => void> = []

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      this.messages.push(JSON.parse(data.toString()))
      this.notify()
    })
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString() }
      this.notify()
    })
    ws.on("error", () => this.notify())
  }

  private notify() {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
  }

  static open(server: RunningServer, key: string, cursor: number | string, epoch: number | string): Promise<Feed> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(feedUrl(server, `?cursor=${cursor}&epoch=${epoch}`), { headers: { authorization: `Bearer ${key}` } })
      const feed = new Feed(ws)
      ws.once("open", () => resolve(feed))
      ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)))
      ws.once("error", reject)
    })
  }

  /** Resolves when `done(messages)` holds; rejects on close first or after `timeoutMs`. */
  waitFor(done: (messages: ReadonlyArray<any>) => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`feed: timed out waiting for ${what}; got ${this.summary()}`)), timeoutMs)
      const check = () => {
        if (done(this.messages)) {
          clearTimeout(timer)
          resolve()
        } else if (this.closed !== undefined) {
          clearTimeout(timer)
          reject(new Error(`feed closed ${JSON.stringify(this.closed)} while waiting for ${what}; got ${this.summary()}`))
        } else {
          this.waiters.push(check)
        }
      }
      check()
    })
  }

  /** Resolves with the close (code and reason) once the server closes. */
  waitForClose(timeoutMs = 30_000): Promise<{ code: number; reason: string }> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`feed: not closed; got ${this.summary()}`)), timeoutMs)
      const check = () => {
        if (this.closed !== undefined) {
          clearTimeout(timer)
          resolve(this.closed)
        } else {
          this.waiters.push(check)
        }
      }
      check()
    })
  }

  /** The cursor of the last hello, changes or heartbeat message. */
  get cursor(): number | undefined {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      if (typeof this.messages[i].cursor === "number") return this.messages[i].cursor
    }
    return undefined
  }

  /** Waits until a changes or hello message has reached `cursor`. */
  waitForCursor(cursor: number, timeoutMs = 30_000) {
    return this.waitFor((ms) => ms.some((m) => (m.type === "changes" || m.type === "hello") && m.cursor >= cursor), `cursor ${cursor}`, timeoutMs)
  }

  changes(): Array<Change> {
    return this.messages.filter((m) => m.type === "changes").flatMap((m) => m.changes)
  }

  summary(): string {
    return JSON.stringify(this.messages.map((m) => m.type === "changes" ? { type: m.type, cursor: m.cursor, n: m.changes.length } : m)).slice(0, 2000)
  }

  close() {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate()
  }
}

/** Applies feed changes in order on top of items by id (upsert replaces, remove deletes). */
export const applyChanges = (items: Map<string, unknown>, changes: ReadonlyArray<Change>) => {
  for (const c of changes) {
    if (c.op === "upsert") items.set(c.item!.id, c.item)
    else if (c.op === "remove") items.delete(c.id!)
    else throw new Error(`unknown change ${JSON.stringify(c)}`)
  }
  return items
}

/** The status a WebSocket upgrade is answered with (101: opened, then closed at once). */
export const upgradeStatus = (url: string, headers: Record<string, string>) =>
  new Promise<number>((resolve, reject) => {
    const socket = new WebSocket(url, { headers })
    socket.once("upgrade", () => {
      socket.terminate()
      resolve(101)
    })
    socket.once("unexpected-response", (_request, response) => {
      resolve(response.statusCode ?? 0)
      response.resume()
    })
    socket.once("error", reject)
  })
