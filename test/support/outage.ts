/**
 * Traffic for the database outage tests: clients that write on every path (POST /buy, /buy-sync,
 * /buy-by-name, deposits, catalogue PUTs) and repeat a request that got a 5xx or no answer as the
 * spec's retry rules say (the same custom_id, tx_id or items, with backoff), each request kept with
 * every answer it got; a feed client that resumes from its last cursor when its session closes;
 * and a watch on `/ready`.
 */
import { randomUUID } from "node:crypto"
import { expect } from "vitest"
import { expectGaplessFeed, Feed } from "./catalogue.js"
import { buyBody, byNameBody, type Merchant, sentCentsFor, sleep } from "./purchases.js"
import type { JsonResponse, RunningServer } from "./server.js"

export type Kind = "buy" | "buy-sync" | "buy-by-name" | "deposit" | "catalogue"

export interface Sent {
  readonly kind: Kind
  readonly merchant: Merchant
  readonly body: Record<string, unknown>
  /** Every answer's status, in order; 0 where the connection failed without one. */
  readonly statuses: Array<number>
  /** The error code of each 5xx answer. */
  readonly failures: Array<unknown>
  /** The last answer (a final one once the traffic has stopped). */
  last: JsonResponse | undefined
}

/** What the clients write: item ids for /buy and /buy-sync (one buy each), a name for /buy-by-name. */
export interface Stock {
  readonly itemIds: Array<string>
  readonly byName: string
  readonly merchants: ReadonlyArray<Merchant>
  /** A new catalogue item to PUT (a catalogue write's upsert). */
  readonly newItem: () => Record<string, unknown>
}

const ORDER: ReadonlyArray<Kind> = ["buy", "deposit", "buy-sync", "catalogue", "buy", "buy-by-name"]

/** The request of a write, sent to `server`. */
const sendTo = (server: RunningServer, sent: Sent): Promise<JsonResponse> => {
  switch (sent.kind) {
    case "deposit":
      return server.admin("/admin/deposits", { method: "POST", body: sent.body })
    case "catalogue":
      return server.admin("/admin/catalogue/items", { method: "PUT", body: sent.body })
    default:
      return server.api(`/${sent.kind}`, { method: "POST", key: sent.merchant.apiKey, body: sent.body })
  }
}

/**
 * `clients` loops of writes spread over `servers`, each request repeated after a 5xx or a failed
 * connection (200 ms, then up to 1 s apart) until it gets another answer; after a 409
 * MERCHANT_CONFLICT too, a few times.
 */
export class Traffic {
  readonly sent: Array<Sent> = []
  private stopping = false
  private readonly loops: Array<Promise<void>>

  constructor(private readonly servers: ReadonlyArray<RunningServer>, private readonly stock: Stock, clients: number) {
    this.loops = Array.from({ length: clients }, (_, i) => this.loop(i))
  }

  /** Stops starting new requests; resolves once every request has its final answer. */
  async stop(): Promise<void> {
    this.stopping = true
    await Promise.all(this.loops)
  }

  private next(n: number): Sent | undefined {
    const kind = ORDER[n % ORDER.length]!
    const merchant = this.stock.merchants[n % this.stock.merchants.length]!
    const body = ((): Record<string, unknown> | undefined => {
      switch (kind) {
        case "buy":
        case "buy-sync": {
          const itemId = this.stock.itemIds.shift()
          return itemId === undefined ? undefined : buyBody({ itemId, maxPrice: 100 })
        }
        case "buy-by-name":
          return byNameBody({ name: this.stock.byName, maxPrice: 100 })
        case "deposit":
          return { merchant_id: merchant.id, network: "tron", amount: sentCentsFor(1_000) / 100, tx_id: `outage-${randomUUID()}` }
        case "catalogue":
          return { items: [this.stock.newItem(), this.stock.newItem()] }
      }
    })()
    return body === undefined ? undefined : { kind, merchant, body, statuses: [], failures: [], last: undefined }
  }

  private async loop(client: number): Promise<void> {
    for (let n = client; !this.stopping; n += 1) {
      const sent = this.next(n)
      if (sent === undefined) continue
      this.sent.push(sent)
      for (let attempt = 0;; attempt++) {
        const server = this.servers[(n + attempt) % this.servers.length]!
        const res = await sendTo(server, sent).catch(() => undefined)
        sent.statuses.push(res?.status ?? 0)
        sent.last = res
        const code = (res?.json as { error?: { code?: unknown } } | undefined)?.error?.code
        // (a conflict may be retried with the same custom_id; the first request may still be at work)
        const conflicts = sent.statuses.filter((status) => status === 409).length
        if (res !== undefined && res.status < 500 && (code !== "MERCHANT_CONFLICT" || conflicts > 3)) break
        if (res !== undefined && res.status >= 500) sent.failures.push(code)
        await sleep(Math.min(200 * 2 ** attempt, 1_000))
      }
      await sleep(40)
    }
  }
}

/**
 * A feed client that, when its session closes, opens another from the last cursor it read (the
 * feed's own resumption): its sessions' messages, each gapless, each starting where the last ended.
 */
export class FeedFollower {
  readonly sessions: Array<{ readonly from: number; readonly feed: Feed }> = []
  /** Resets the server sent (close 4409: the position cannot be resumed; the client must load a dump again). */
  readonly resets: Array<string> = []
  private stopped = false

  private constructor(private readonly server: RunningServer, private readonly key: string, readonly epoch: number) {}

  static async start(server: RunningServer, key: string, cursor: number, epoch: number): Promise<FeedFollower> {
    const follower = new FeedFollower(server, key, epoch)
    await follower.open(cursor)
    return follower
  }

  private async open(from: number): Promise<void> {
    while (!this.stopped) {
      const feed = await Feed.open(this.server, this.key, from, this.epoch).catch(() => undefined)
      if (feed !== undefined) {
        this.sessions.push({ from, feed })
        feed.ws.once("close", (code, reason) => {
          if (code === 4409) this.resets.push(reason.toString())
          else void this.open(feed.cursor ?? from)
        })
        return
      }
      await sleep(250)
    }
  }

  /** Waits until the last session has read up to `cursor`. */
  async waitForCursor(cursor: number, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while ((this.sessions.at(-1)?.feed.cursor ?? -1) < cursor) {
      if (Date.now() > deadline) throw new Error(`feed: not at cursor ${cursor}; sessions ${this.sessions.map((s) => s.feed.summary()).join("\n")}`)
      await sleep(50)
    }
  }

  /** Every change read, in order, after checking that each session is gapless and resumes where the last ended. */
  changes() {
    let cursor: number | undefined
    for (const { from, feed } of this.sessions) {
      if (cursor !== undefined) expect(from, "a session resumes where the last ended").toBe(cursor)
      cursor = expectGaplessFeed(feed.messages, this.epoch, from)
    }
    return this.sessions.flatMap(({ feed }) => feed.changes())
  }

  close(): void {
    this.stopped = true
    for (const { feed } of this.sessions) feed.close()
  }
}

/** `/ready` of a node, asked every 100 ms until stopped: each status seen, in order, with when. */
export class ReadyWatch {
  readonly seen: Array<{ readonly at: number; readonly status: number }> = []
  private stopped = false
  private readonly running: Promise<void>

  constructor(private readonly server: RunningServer) {
    this.running = this.run()
  }

  private async run() {
    while (!this.stopped) {
      const status = await fetch(`${this.server.opsUrl}/ready`).then((r) => r.status, () => 0)
      this.seen.push({ at: Date.now(), status })
      await sleep(100)
    }
  }

  /** Waits until `/ready` has answered `status` after `since`. */
  async waitFor(status: number, since: number, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const hit = this.seen.find((s) => s.at >= since && s.status === status)
      if (hit !== undefined) return hit.at
      if (Date.now() > deadline) throw new Error(`/ready never answered ${status}: ${JSON.stringify(this.seen.slice(-20))}`)
      await sleep(50)
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.running
  }
}
