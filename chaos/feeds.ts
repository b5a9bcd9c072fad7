/**
 * A realtime feed client as a merchant's integration runs one: it loads the full dump, then follows
 * the WebSocket feed from the dump's cursor and epoch, applying each change to its copy of the
 * catalogue. When a session ends (a node killed or drained, a slow-consumer close) it resumes from
 * its last cursor on any live node; after a reset (close 4409) it loads the dump again. Every
 * message is checked against its cursor: hello at exactly that cursor, changes following on
 * without a gap, heartbeats at it. A message that breaks this is a violation, and the client
 * loads the dump again so that it can go on.
 */
import { applyChanges, type Change, Feed, rawGet } from "../test/support/feed.js"
import { sleep } from "../test/support/polling.js"
import type { Cluster } from "./cluster.js"
import { type AnswerLog, codeOf } from "./report.js"

interface Message {
  readonly type: string
  readonly epoch?: number
  readonly cursor?: number
  readonly changes?: ReadonlyArray<Change>
  readonly reason?: string
}

export class FeedFollower {
  items = new Map<string, unknown>()
  cursor = -1
  epoch = -1
  readonly violations: Array<string> = []
  /** The reasons of the resets the feed sent. */
  readonly resets: Array<string> = []
  /** The close code of each session. */
  readonly closes: Array<number> = []
  sessions = 0
  bootstraps = 0
  failedConnects = 0
  changesApplied = 0
  private stopped = false
  private feed: Feed | undefined
  private running: Promise<void> | undefined

  constructor(private readonly cluster: Cluster, private readonly key: string, private readonly answers: AnswerLog) {}

  start(): void {
    this.running = this.run()
  }

  private async run() {
    let bootstrap = true
    while (!this.stopped) {
      if (bootstrap) await this.bootstrap()
      bootstrap = await this.session() === "bootstrap"
    }
  }

  /** Loads the full dump from a live node: the items, and the cursor and epoch to follow from. */
  private async bootstrap() {
    while (!this.stopped) {
      const node = await this.cluster.anyLive()
      const res = await rawGet(`${node.baseUrl}/api/v1/merchant/items/full-dump`, { authorization: `Bearer ${this.key}` }).catch(() => undefined)
      let json: unknown
      try {
        json = res === undefined ? undefined : JSON.parse(res.body.toString())
      } catch {
        json = undefined
      }
      this.answers.push({ source: "dump", admin: false, status: res?.status ?? 0, code: codeOf(json), at: Date.now(), node: node.baseUrl })
      if (res?.status === 200) {
        const items = (json as { items: Array<{ id: string }> }).items
        this.items = new Map(items.map((item) => [item.id, item]))
        this.epoch = Number(res.headers["x-catalog-epoch"])
        this.cursor = Number(res.headers["x-catalog-cursor"])
        this.bootstraps += 1
        return
      }
      await sleep(250)
    }
  }

  /** One WebSocket session on a live node from the current cursor: resume or load the dump again after it. */
  private async session(): Promise<"resume" | "bootstrap"> {
    const node = this.cluster.pick()
    const feed = node === undefined ? undefined : await Feed.open(node, this.key, this.cursor, this.epoch).catch(() => undefined)
    if (feed === undefined) {
      this.failedConnects += 1
      await sleep(200)
      return "resume"
    }
    this.feed = feed
    this.sessions += 1
    let outcome: "resume" | "bootstrap" = "resume"
    let read = 0
    // Feed records every message; each is applied here in order, once
    const drain = () => {
      while (outcome === "resume" && read < feed.messages.length) {
        const first = read === 0
        if (this.apply(feed.messages[read++] as Message, first) === "bootstrap") {
          outcome = "bootstrap"
          feed.close()
        }
      }
    }
    await new Promise<void>((resolve) => {
      feed.ws.on("message", drain)
      feed.ws.once("close", () => {
        drain()
        resolve()
      })
      drain()
      if (feed.closed !== undefined) resolve()
    })
    if (feed.closed !== undefined) this.closes.push(feed.closed.code)
    this.feed = undefined
    if (outcome === "resume") await sleep(20)
    return outcome
  }

  /** Applies one message; "bootstrap" when the feed reset or broke its own order. */
  private apply(m: Message, first: boolean): "ok" | "bootstrap" {
    if (m.type === "reset") {
      this.resets.push(m.reason ?? "(no reason)")
      return "bootstrap"
    }
    const at = `at cursor ${this.cursor} of epoch ${this.epoch}`
    if (first) {
      if (m.type === "hello" && m.cursor === this.cursor && m.epoch === this.epoch) return "ok"
      this.violations.push(`first message ${JSON.stringify(m).slice(0, 200)} ${at}`)
      return "bootstrap"
    }
    if (m.type === "changes" && m.changes !== undefined && m.changes.length > 0 && m.epoch === this.epoch && m.cursor === this.cursor + m.changes.length) {
      applyChanges(this.items, m.changes)
      this.cursor = m.cursor
      this.changesApplied += m.changes.length
      return "ok"
    }
    if (m.type === "heartbeat" && m.cursor === this.cursor && m.epoch === this.epoch) return "ok"
    this.violations.push(`${m.type} to cursor ${m.cursor} (${m.changes?.length ?? 0} changes, epoch ${m.epoch}) ${at}`)
    return "bootstrap"
  }

  /** Waits until the client has applied every change up to `cursor`; false after `timeoutMs`. */
  async reach(cursor: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (this.cursor < cursor) {
      if (Date.now() > deadline) return false
      await sleep(100)
    }
    return true
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.feed?.close()
    await Promise.race([this.running, sleep(10_000)])
  }
}
