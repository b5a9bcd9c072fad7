/**
 * Writes on every path for the database outage tests and the chaos command: clients that send
 * POST /buy, /buy-sync, /buy-by-name, deposits and catalogue PUTs over a set of nodes and repeat a
 * request that got a 5xx or no answer as the spec's retry rules say (the same custom_id, tx_id or
 * items, with backoff, on the next node), each request kept with every answer it got and when.
 * No test runner here: the chaos command runs without it.
 */
import { randomUUID } from "node:crypto"
import { sleep } from "./polling.js"
import { buyBody, byNameBody, type Merchant, sentCentsFor } from "./purchase-requests.js"
import type { JsonResponse, RunningServer } from "./server.js"

export type Kind = "buy" | "buy-sync" | "buy-by-name" | "deposit" | "catalogue"

export interface Answer {
  readonly status: number
  readonly code: unknown
  readonly at: number
  readonly node: string
}

export interface Sent {
  readonly kind: Kind
  readonly merchant: Merchant
  readonly body: Record<string, unknown>
  /** Every answer's status, in order; 0 where the connection failed without one. */
  readonly statuses: Array<number>
  /** The error code of each 5xx answer. */
  readonly failures: Array<unknown>
  /** Every answer as it came: status (0: none), error code, when, and the node's API URL. */
  readonly answers: Array<Answer>
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
 * connection (200 ms, then up to 1 s apart, on the next node) until it gets another answer; after a
 * 409 MERCHANT_CONFLICT too, a few times. `servers` is read at every attempt: a caller that starts
 * a node again puts it in its slot.
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
    return body === undefined ? undefined : { kind, merchant, body, statuses: [], failures: [], answers: [], last: undefined }
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
        sent.answers.push({ status: res?.status ?? 0, code, at: Date.now(), node: server.baseUrl })
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
