/**
 * bench/webhooks' setup: a fresh database, the receiver (receiver.mjs) pinned to core 1, the
 * service (webhooks to private addresses allowed, no churn, the purchase steps sped up) pinned to
 * core 0, and 100 merchants whose webhooks go to the receiver; with the ways every part writes
 * events to the outbox and waits for their arrival. The object it returns is what the parts
 * (deliveries.mjs, mix.mjs, latency.mjs, reads.mjs) are given.
 */
import { join } from "node:path"
import { admin, connectClient, createDatabase, forkReady, pinProcess, ROOT, rpc, sleep, startService } from "../lib/harness.mjs"
import { depositEvent } from "./bodies.mjs"

export const setUp = async (opts, out) => {
  const database = await createDatabase("bench_webhooks")
  const { proc: receiverProc, ready: receiverReady } = await forkReady(join(ROOT, "bench/webhooks/receiver.mjs"), [], process.env, "receiver")
  pinProcess(receiverProc.child.pid, 1)
  const receiver = rpc(receiverProc)
  const receiverUrl = (path) => `http://127.0.0.1:${receiverReady.port}${path}`

  const service = await startService({
    databaseUrl: database.url,
    dataDir: join(out, `data-${process.pid}`),
    extra: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", SIM_CHURN_PER_SECOND: "0", SIM_TIME_SCALE: "0.05" },
    untilIdle: true,
    nodeArgs: opts.nodeArgs.split(" ").filter((arg) => arg !== "")
  })
  pinProcess(service.child.pid, 0)
  const db = await connectClient(database.url)

  const merchants = []
  for (let i = 0; i < 100; i++) {
    const m = await admin(service, "/admin/merchants", { name: `hook-${i}`, webhook_url: receiverUrl(`/m/${i}`) })
    merchants.push({ id: m.merchant_id, secret: m.webhook_secret, url: receiverUrl(`/m/${i}`), apiKey: m.api_key })
  }

  /** `n` balance.deposited-shaped events spread over the first `count` merchants, as the outbox stores them. */
  const makeEvents = (n, count) =>
    Array.from({ length: n }, (_, i) => {
      const m = merchants[i % count]
      return { ...depositEvent(), merchantId: m.id, url: m.url, secret: m.secret }
    })

  const insertEvents = (events) =>
    db.query(
      `INSERT INTO webhook_events (id, merchant_id, event_type, body)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[])`,
      [events.map((e) => e.id), events.map((e) => e.merchantId), events.map((e) => e.type), events.map((e) => e.body)]
    )

  const waitArrivals = async (n, timeoutMs = 600_000) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const status = await receiver({ op: "status" })
      if (status.count >= n) return status
      if (Date.now() > deadline) throw new Error(`only ${status.count} of ${n} arrived`)
      await sleep(20)
    }
  }

  const tearDown = async () => {
    await db.end()
    await service.stop()
    await receiverProc.stop()
    await database.drop()
  }

  return {
    service,
    db,
    databaseName: database.name,
    receiverProc,
    receiver,
    receiverUrl,
    merchants,
    out,
    makeEvents,
    insertEvents,
    waitArrivals,
    tearDown
  }
}
