/**
 * A graceful stop under load (SIGTERM): 16 merchants' clients buying on kept-alive connections
 * (/buy and /buy-sync), 100 realtime feed clients and webhooks being delivered to a local receiver
 * when the signal comes. Every request the service read is answered; a connection made once the
 * API stopped listening is refused; every feed client is closed with 1001 (going away: resume
 * elsewhere); the purchase worker and the webhook sender leave nothing leased for the lease to
 * expire; the process exits 0, having cut no connection at the grace's end. And the same stop
 * whichever process the supervisor signals: `npm start` itself, or its whole process group.
 */
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { connect } from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { availableDump } from "../support/catalogue.js"
import { freshDatabase } from "../support/database.js"
import { type BuyOutcome, startBuyers, startFeedClient, until } from "../support/load.js"
import { ROOT } from "../support/paths.js"
import { withStoppedDatabase } from "../support/purchases-db.js"
import { fund, itemOf, loadItems, type Merchant, PURCHASE_ENV } from "../support/purchases.js"
import { freePorts, startServer } from "../support/server.js"
import { startReceiver } from "../support/webhooks.js"

const BUYERS = 16
const FEED_CLIENTS = 100
const ITEMS = 2_000

/** The statuses of an answered buy: created (201), acknowledged or found again (200), still waiting for the provider (202). */
const BUY_ANSWERS = [200, 201, 202]

describe("graceful stop under load", () => {
  const cleanups: Array<() => Promise<unknown>> = []
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined)
  })

  it(
    "answers every request it read, refuses new connections once it stops listening, closes every feed client with 1001, hands over purchases and webhooks, and exits 0",
    async () => {
      const database = await freshDatabase()
      cleanups.push(() => database.drop())
      const receiver = await startReceiver()
      cleanups.push(() => receiver.close())
      const server = await startServer({
        database,
        env: {
          ...PURCHASE_ENV,
          BUY_SYNC_WAIT_SECONDS: "3",
          SHUTDOWN_GRACE_SECONDS: "10",
          DUMP_INTERVAL_SECONDS: "1",
          WEBHOOK_ALLOW_PRIVATE_TARGETS: "true"
        }
      })
      cleanups.push(() => server.stop())

      const merchants: Array<Merchant> = []
      for (let i = 0; i < 4; i++) {
        const created = await server.createMerchant(undefined, receiver.url("/ok"))
        await fund(server, created, 1_000_000)
        merchants.push({ id: created.id, apiKey: created.apiKey })
      }
      const items: Array<string> = []
      for (let i = 0; i < ITEMS / 500; i++) items.push(...await loadItems(server, Array.from({ length: 500 }, () => itemOf(100))))
      const dump = await availableDump(server, merchants[0]!.apiKey)

      const feeds = Array.from(
        { length: FEED_CLIENTS },
        () =>
          startFeedClient({ url: () => server.baseUrl.replace(/^http/, "ws"), key: merchants[0]!.apiKey, epoch: dump.epoch, cursor: dump.cursor, resume: true })
      )
      cleanups.push(async () => feeds.forEach((feed) => feed.stop()))
      await until("every feed client's hello", () => feeds.every((feed) => feed.sessions() === 1))

      const buyers = startBuyers({ baseUrl: () => server.baseUrl, merchants, items, clients: BUYERS, stopOnRefusal: true, maxPrice: 5 })
      cleanups.push(() => buyers.stop())
      // under way: buys answered, feed clients reading the reservations, webhooks arriving
      await until(
        "buys answered, feed changes and webhook deliveries",
        () => buyers.answered() >= 200 && feeds.every((feed) => feed.changes() > 0) && receiver.deliveries.length >= 50,
        90_000
      )

      const exitCode = await server.stop("SIGTERM")
      await buyers.done

      expect(exitCode).toBe(0)
      // nothing was cut at the grace's end: every connection ended on its own
      expect(server.output()).not.toMatch(/grace ran out/)

      // Every request was answered with a buy's status, or its connection was refused once the API
      // had stopped listening; none was cut (a kept-alive client's next request after the listener
      // closed was answered, with Connection: close).
      const failed = buyers.outcomes.filter((o) => o.kind === "failed" || (o.kind === "answered" && !BUY_ANSWERS.includes(o.status!)))
      expect(failed).toEqual([])
      const count = (kind: BuyOutcome["kind"]) => buyers.outcomes.filter((o) => o.kind === kind).length
      console.log(`buys: ${count("answered")} answered, ${count("refused")} refused`)
      // every buyer went on until the API stopped listening
      expect(count("refused")).toBe(BUYERS)

      // Every feed client got the going-away close, and resuming as clients do (at once, from its
      // last cursor) found the API no longer listening: refused, or told 1001 again at once.
      for (const feed of feeds) feed.stop()
      console.log(
        `feed: ${feeds.reduce((n, f) => n + f.sessions(), 0)} sessions, closes ${
          JSON.stringify([...new Set(feeds.flatMap((f) => f.closes))])
        }, failed connects ${JSON.stringify([...new Set(feeds.flatMap((f) => f.failedConnects))])}`
      )
      expect(feeds.filter((feed) => feed.closes.length === 0 || feed.closes.some((code) => code !== 1001))).toEqual([])
      expect(feeds.flatMap((feed) => feed.failedConnects).filter((failure) => !failure.includes("ECONNREFUSED"))).toEqual([])
      expect(feeds.flatMap((feed) => feed.violations)).toEqual([])

      const answered = new Set(buyers.outcomes.filter((o) => o.kind === "answered").map((o) => o.customId))
      await withStoppedDatabase(database, async (query) => {
        // a purchase exists only for a request that was answered: nothing the service read went unanswered
        const bought = await query<{ custom_id: string }>("SELECT custom_id FROM purchases")
        expect(bought.length).toBeGreaterThan(0)
        expect(bought.filter((row) => !answered.has(row.custom_id))).toEqual([])
        // what the worker held was let go, and no webhook event waits for a lease of the stopped process to end
        expect(await query("SELECT id FROM purchases WHERE lease_owner IS NOT NULL")).toEqual([])
        expect(await query("SELECT id FROM webhook_events WHERE delivery_status = 'sending'")).toEqual([])
      })
    },
    180_000
  )
})

/** Whether something accepts connections on the port. */
const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("stopping `npm start`", () => {
  /**
   * The service as a supervisor starts it, `npm start`, with the harness's settings; `prestart`
   * is skipped (`--ignore-scripts`): the bundle is globalSetup's to rebuild, and a source edited
   * during a run must not have npm rebuild it under the other test files.
   */
  const startThroughNpm = async () => {
    const database = await freshDatabase()
    const [port, opsPort] = await freePorts(2)
    const env: Record<string, string> = {
      ...process.env as Record<string, string>,
      PORT: String(port),
      OPS_PORT: String(opsPort),
      HOST: "127.0.0.1",
      OPS_HOST: "127.0.0.1",
      DATA_DIR: database.dataDir,
      ADMIN_TOKEN: "adm_test_token_0123456789abcdefghijkl",
      DEMO_MERCHANT: "false",
      LOG_LEVEL: "info",
      SIM_TIME_SCALE: "0.02"
    }
    delete env["DATABASE_URL"]
    if (database.url !== undefined) env["DATABASE_URL"] = database.url
    // its own process group, as a terminal's foreground job or a service's control group is
    const npm = spawn("npm", ["start", "--ignore-scripts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true })
    let output = ""
    npm.stdout.on("data", (chunk) => output += chunk)
    npm.stderr.on("data", (chunk) => output += chunk)
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      npm.once("exit", (code, signal) => resolve({ code, signal }))
    )
    await until("/ready through npm start", () => fetch(`http://127.0.0.1:${opsPort}/ready`).then((r) => r.status === 200, () => false), 60_000, 200)
    // npm's child is node itself: `exec` replaced the shell that runs the script
    const children = readFileSync(`/proc/${npm.pid}/task/${npm.pid}/children`, "utf8").trim().split(/\s+/).map(Number)
    expect(children).toHaveLength(1)
    const service = children[0]!
    expect(readFileSync(`/proc/${service}/cmdline`, "utf8").split("\0")[0]).toMatch(/(^|\/)node$/)
    const cleanup = async () => {
      for (const pid of [service, npm.pid!]) if (alive(pid)) process.kill(pid, "SIGKILL")
      await database.drop()
    }
    return { npm, service, ports: [port!, opsPort!], exited, output: () => output, cleanup }
  }

  const expectStopped = async (started: Awaited<ReturnType<typeof startThroughNpm>>) => {
    // npm exits as node did: 0, not by the signal (node drained and stopped on its own)
    expect(await started.exited).toEqual({ code: 0, signal: null })
    await until("the service's process to end", () => !alive(started.service), 30_000)
    for (const port of started.ports) expect(await accepts(port)).toBe(false)
    expect(started.output()).toMatch(/"message":"API drained"/)
    expect(started.output()).toMatch(/"message":"stopped"/)
  }

  it("SIGTERM to npm reaches node, which drains, stops and frees its ports; npm exits 0", async () => {
    const started = await startThroughNpm()
    try {
      process.kill(started.npm.pid!, "SIGTERM")
      await expectStopped(started)
    } finally {
      await started.cleanup()
    }
  }, 120_000)

  it(
    "SIGINT to the whole process group (a terminal's Ctrl-C) reaches node directly and through npm; pressed again during the drain, it does not cut it: node stops on its own, npm exits 0",
    async () => {
      const started = await startThroughNpm()
      try {
        // (node may see the first one once or twice: two signals close together are delivered as one)
        process.kill(-started.npm.pid!, "SIGINT")
        await until("the drain to begin", () => started.output().includes("shutting down: the API stops taking connections"))
        process.kill(-started.npm.pid!, "SIGINT")
        await expectStopped(started)
        expect(started.output()).toMatch(/already shutting down/)
      } finally {
        await started.cleanup()
      }
    },
    120_000
  )
})
