/**
 * For the database outage tests: a feed client that resumes from its last cursor when its session
 * closes, and a watch on `/ready`. The writes on every path (Traffic) are in traffic.ts, exported
 * from here too.
 */
import { expect } from "vitest"
import { expectGaplessFeed, Feed } from "./catalogue.js"
import { sleep } from "./polling.js"
import type { RunningServer } from "./server.js"

export { type Kind, type Sent, type Stock, Traffic } from "./traffic.js"

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
