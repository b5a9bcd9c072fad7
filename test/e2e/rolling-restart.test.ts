/**
 * A rolling restart behind a real HAProxy, run from the shipped ops/haproxy/haproxy.cfg with the
 * test's ports: two nodes on one PostgreSQL, 16 clients buying through HAProxy on kept-alive
 * connections, feed clients through HAProxy that resume from their last cursor whenever they are
 * closed, webhooks to a local receiver; one node is stopped (SIGTERM) and started again, and once
 * HAProxy has it back, the other. Nothing is lost: every request gets a buy's answer, every feed
 * client goes on with no gap on the other node, every webhook event is delivered, none waiting for
 * the lease of a stopped node.
 */
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { availableDump } from "../support/catalogue.js"
import { freshDatabase } from "../support/database.js"
import { startHaproxy } from "../support/haproxy.js"
import { type BuyOutcome, startBuyers, startFeedClient, until } from "../support/load.js"
import { fund, itemOf, loadItems, type Merchant, PURCHASE_ENV } from "../support/purchases.js"
import { fastLaneAnswers, freePorts, metricValue, type RunningServer, startServer } from "../support/server.js"
import { startReceiver } from "../support/webhooks.js"

const BUYERS = 16
const FEED_CLIENTS = 40
const ITEMS = 3_000

/** The statuses of an answered buy: created (201), acknowledged or found again (200), still waiting for the provider (202). */
const BUY_ANSWERS = [200, 201, 202]

const ENV = {
  ...PURCHASE_ENV,
  BUY_SYNC_WAIT_SECONDS: "3",
  SHUTDOWN_GRACE_SECONDS: "10",
  DUMP_INTERVAL_SECONDS: "1",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true"
}

describe.runIf(!!process.env["DATABASE_URL"])("rolling restart of two nodes behind HAProxy (DATABASE_URL only: the nodes share one PostgreSQL)", () => {
  const cleanups: Array<() => Promise<unknown>> = []
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined)
  })

  it("loses no request, no feed change and no webhook while each node in turn is stopped and started again", async () => {
    const database = await freshDatabase()
    cleanups.push(() => database.drop())
    const receiver = await startReceiver()
    cleanups.push(() => receiver.close())
    const [apiA, opsA, apiB, opsB, front, stats] = await freePorts(6)
    const ports = [{ api: apiA!, ops: opsA! }, { api: apiB!, ops: opsB! }]
    // the first start migrates the database: the second node starts once it is done
    const nodes: Array<RunningServer> = []
    for (const node of ports) nodes.push(await startServer({ database, env: ENV, ports: node }))
    cleanups.push(() => Promise.all(nodes.map((node) => node.stop())))
    const haproxy = await startHaproxy({ front: front!, stats: stats!, nodes: ports })
    cleanups.push(() => haproxy.stop())
    const bothUp = () => haproxy.states().then((states) => states["node1"] === "UP" && states["node2"] === "UP")
    await until("both nodes UP in HAProxy", bothUp, 30_000)

    const merchants: Array<Merchant> = []
    for (let i = 0; i < 4; i++) {
      const created = await nodes[0]!.createMerchant(undefined, receiver.url("/ok"))
      await fund(nodes[0]!, created, 1_000_000)
      merchants.push({ id: created.id, apiKey: created.apiKey })
    }
    const items: Array<string> = []
    for (let i = 0; i < ITEMS / 500; i++) items.push(...await loadItems(nodes[0]!, Array.from({ length: 500 }, () => itemOf(100))))
    const dump = await availableDump(nodes[0]!, merchants[0]!.apiKey)

    const feeds = Array.from(
      { length: FEED_CLIENTS },
      () => startFeedClient({ url: () => haproxy.url.replace(/^http/, "ws"), key: merchants[0]!.apiKey, epoch: dump.epoch, cursor: dump.cursor, resume: true })
    )
    cleanups.push(async () => feeds.forEach((feed) => feed.stop()))
    await until("every feed client's hello", () => feeds.every((feed) => feed.sessions() === 1))
    // Through HAProxy a connection is only refused if HAProxy itself is not listening: then the
    // buyer sends the same request again (nothing was sent). Anything else that is not a buy's
    // answer (a reset, a cut answer, HAProxy's 502, 503 or 504) is a failed request.
    const buyers = startBuyers({ baseUrl: () => haproxy.url, merchants, items, clients: BUYERS, stopOnRefusal: false, maxPrice: 5 })
    cleanups.push(() => buyers.stop())
    const flowing = (answered: number) => () => buyers.answered() >= answered && receiver.deliveries.length >= answered / 4
    await until("buys answered and webhooks delivered", flowing(150), 90_000)

    for (const [i, node] of nodes.entries()) {
      const name = `node${i + 1}`
      expect(await node.stop("SIGTERM")).toBe(0)
      await until(`${name} DOWN in HAProxy`, async () => /DOWN/.test((await haproxy.states())[name] ?? ""), 30_000)
      const answeredBefore = buyers.answered()
      const restarted = await startServer({ database, env: ENV, ports: ports[i]! })
      nodes[i] = restarted
      await until(`${name} UP again in HAProxy`, bothUp, 30_000)
      // traffic reaches the restarted node, and goes on
      await until(`${name} answering buys`, async () => (await fastLaneAnswers(restarted, "/buy")) > 0, 30_000)
      await until("more buys answered", flowing(answeredBefore + 100), 60_000)
    }
    await buyers.stop()

    const failed = buyers.outcomes.filter((o) => o.kind === "failed" || (o.kind === "answered" && !BUY_ANSWERS.includes(o.status!)))
    expect(failed.slice(0, 5), `${failed.length} failed; HAProxy said:\n${haproxy.output().slice(-4_000)}`).toEqual([])
    const count = (kind: BuyOutcome["kind"]) => buyers.outcomes.filter((o) => o.kind === kind).length
    console.log(`buys through HAProxy: ${count("answered")} answered, ${count("refused")} refused by HAProxy and sent again`)

    // every feed client was moved off a stopping node with 1001 at least once, and resumed on the
    // other with no gap and nothing repeated, up to the log's head
    // (the worker may still change the catalogue for a while: each client's cursor meets the head once it settles)
    await until("every feed client at the log's head", async () => {
      const head = await metricValue(nodes[1]!, "catalogue_cursor")
      return feeds.every((feed) => feed.cursor() === head)
    }, 30_000)
    for (const feed of feeds) feed.stop()
    console.log(
      `feed: ${feeds.reduce((n, f) => n + f.sessions(), 0)} sessions of ${FEED_CLIENTS} clients, ${feeds.reduce((n, f) => n + f.changes(), 0)} changes`
    )
    expect(feeds.flatMap((feed) => feed.violations)).toEqual([])
    expect(feeds.flatMap((feed) => feed.failedConnects)).toEqual([])
    expect(feeds.filter((feed) => feed.closes.length === 0 || feed.closes.some((code) => code !== 1001))).toEqual([])

    // Every webhook event is delivered, and soon: an event left held by a stopped node would wait
    // for its lease (95 s at the default 10 s attempt timeout), far past this wait.
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    cleanups.push(() => client.end())
    const undelivered = async () => Number((await client.query("SELECT count(*) AS n FROM webhook_events WHERE delivery_status <> 'delivered'")).rows[0].n)
    await until("every webhook event delivered", async () => (await undelivered()) === 0, 45_000, 250)
    const events = (await client.query<{ id: string }>("SELECT id FROM webhook_events")).rows.map((row) => row.id)
    const received = new Set(receiver.deliveries.map((d) => String(d.headers["x-event-id"])))
    expect(events.filter((id) => !received.has(id))).toEqual([])
    console.log(`webhooks: ${events.length} events, ${receiver.deliveries.length} deliveries`)

    // a purchase exists only for a request that was answered
    const answered = new Set(buyers.outcomes.filter((o) => o.kind === "answered").map((o) => o.customId))
    const bought = (await client.query<{ custom_id: string }>("SELECT custom_id FROM purchases")).rows
    expect(bought.filter((row) => !answered.has(row.custom_id))).toEqual([])
  }, 240_000)
})
