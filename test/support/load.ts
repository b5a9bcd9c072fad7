/**
 * Load for the shutdown tests: merchants buying over kept-alive connections (/buy and /buy-sync),
 * realtime feed clients that check every message they get and may resume from their last cursor
 * when they are closed, and the outcome of every request classified: "answered" when a whole
 * response came back, "refused" when its connection was refused (nothing was sent), else "failed"
 * (a connection reset or closed before or during the answer).
 */
import { Agent, request as httpRequest } from "node:http"
import WebSocket from "ws"
import { buyBody, type Merchant } from "./purchases.js"

export interface BuyOutcome {
  readonly path: "/buy" | "/buy-sync"
  readonly customId: string
  readonly kind: "answered" | "refused" | "failed"
  readonly status?: number
  readonly detail?: string
}

/** One POST with a JSON body over `agent`: the answer, or how it failed. */
const post = (agent: Agent, baseUrl: string, path: BuyOutcome["path"], key: string, body: { custom_id: string }) =>
  new Promise<BuyOutcome>((resolve) => {
    const text = JSON.stringify(body)
    let answering = false
    const req = httpRequest(`${baseUrl}/api/v1/merchant${path}`, {
      method: "POST",
      agent,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(text) }
    }, (res) => {
      answering = true
      let data = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => data += chunk)
      res.on("end", () => resolve({ path, customId: body.custom_id, kind: "answered", status: res.statusCode!, detail: data.slice(0, 300) }))
      res.on("error", (error) => resolve({ path, customId: body.custom_id, kind: "failed", detail: `answer cut: ${error.message}` }))
    })
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (answering) return
      const kind = error.code === "ECONNREFUSED" ? "refused" : "failed"
      resolve({ path, customId: body.custom_id, kind, detail: `${error.code ?? ""} ${error.message}${req.reusedSocket ? " (kept-alive connection)" : ""}` })
    })
    req.end(text)
  })

export interface Buyers {
  /** Every request's outcome, a refused one's retries included (same custom_id). */
  readonly outcomes: Array<BuyOutcome>
  readonly answered: () => number
  /** Tells the buyers to stop after their current request; resolves once they all have. */
  readonly stop: () => Promise<void>
  /** Resolves once every buyer has stopped (told to, out of items, or refused with `stopOnRefusal`). */
  readonly done: Promise<void>
}

/**
 * `clients` buyers, each on its own kept-alive connection, alternating /buy and /buy-sync on items
 * taken from `items` (each bought once). With `stopOnRefusal`, a buyer stops at its first refused
 * connection (the service stopped listening); otherwise a refused request is sent again (same
 * custom_id) after a pause: nothing was sent.
 */
export const startBuyers = (options: {
  readonly baseUrl: () => string
  readonly merchants: ReadonlyArray<Merchant>
  readonly items: Array<string>
  readonly clients: number
  readonly stopOnRefusal: boolean
  readonly maxPrice: number
}): Buyers => {
  const outcomes: Array<BuyOutcome> = []
  let stopping = false
  const agents: Array<Agent> = []
  const buyer = async (n: number) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    agents.push(agent)
    const merchant = options.merchants[n % options.merchants.length]!
    for (let i = 0; !stopping; i++) {
      const itemId = options.items.pop()
      if (itemId === undefined) return
      const path = (n + i) % 2 === 0 ? "/buy" : "/buy-sync"
      const body = buyBody({ itemId, maxPrice: options.maxPrice })
      for (;;) {
        const outcome = await post(agent, options.baseUrl(), path, merchant.apiKey, body)
        outcomes.push(outcome)
        if (outcome.kind === "refused") {
          if (options.stopOnRefusal) return
          if (stopping) break
          await new Promise((r) => setTimeout(r, 50))
          continue
        }
        break
      }
    }
  }
  const done = Promise.all(Array.from({ length: options.clients }, (_, n) => buyer(n))).then(() => {
    for (const agent of agents) agent.destroy()
  })
  return {
    outcomes,
    answered: () => outcomes.filter((o) => o.kind === "answered").length,
    stop: () => {
      stopping = true
      return done
    },
    done
  }
}

/** What a feed client saw that the feed protocol does not allow (a gap, a repeat, a reset). */
export interface FeedClient {
  /** The cursor of the last message applied. */
  readonly cursor: () => number
  /** Every close this client got, in order (1006 when the connection was lost without a close frame). */
  readonly closes: Array<number>
  /** Connections that opened (the first and every resume). */
  readonly sessions: () => number
  /** Attempts to connect that failed (refused, or an HTTP answer instead of the upgrade). */
  readonly failedConnects: Array<string>
  readonly violations: Array<string>
  /** Changes applied so far. */
  readonly changes: () => number
  readonly stop: () => void
}

/**
 * A feed client from `cursor` of `epoch` that checks each message against the last cursor it
 * applied: hello at exactly that cursor, changes following on without a gap, heartbeats at it.
 * With `resume`, it connects again from its last cursor whenever it is closed, until stopped.
 */
export const startFeedClient = (options: {
  readonly url: () => string
  readonly key: string
  readonly epoch: number
  readonly cursor: number
  readonly resume: boolean
}): FeedClient => {
  let cursor = options.cursor
  let sessions = 0
  let changes = 0
  let stopped = false
  let socket: WebSocket | undefined
  const closes: Array<number> = []
  const failedConnects: Array<string> = []
  const violations: Array<string> = []
  const connect = () => {
    if (stopped) return
    const ws = new WebSocket(`${options.url()}/api/v1/merchant/items/stream?cursor=${cursor}&epoch=${options.epoch}`, {
      headers: { authorization: `Bearer ${options.key}` }
    })
    socket = ws
    let opened = false
    let greeted = false
    ws.on("open", () => {
      opened = true
      sessions += 1
    })
    ws.on("unexpected-response", (_req, res) => {
      failedConnects.push(`HTTP ${res.statusCode}`)
      ws.terminate()
    })
    ws.on("error", (error) => {
      if (!opened) failedConnects.push(error.message)
    })
    ws.on("message", (data) => {
      const m = JSON.parse(data.toString())
      if (!greeted) {
        greeted = true
        if (m.type !== "hello" || m.cursor !== cursor || m.epoch !== options.epoch) violations.push(`first message ${JSON.stringify(m)} at cursor ${cursor}`)
        return
      }
      if (m.type === "changes") {
        if (m.epoch !== options.epoch || m.cursor !== cursor + m.changes.length) {
          violations.push(`changes to ${m.cursor} (${m.changes.length}) after cursor ${cursor}`)
        }
        cursor = m.cursor
        changes += m.changes.length
      } else if (m.type !== "heartbeat" || m.cursor !== cursor) {
        violations.push(`unexpected ${JSON.stringify(m).slice(0, 200)} at cursor ${cursor}`)
      }
    })
    ws.on("close", (code) => {
      if (opened) closes.push(code)
      if (options.resume && !stopped) setTimeout(connect, opened ? 20 : 100)
    })
  }
  connect()
  return {
    cursor: () => cursor,
    closes,
    sessions: () => sessions,
    failedConnects,
    violations,
    changes: () => changes,
    stop: () => {
      stopped = true
      socket?.terminate()
    }
  }
}

/** Resolves when `check` holds, polling every `pauseMs`; rejects with `what` after `timeoutMs`. */
export const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000, pauseMs = 50) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, pauseMs))
  }
}
