/**
 * The webhook claim in process on the test database, with a backlog its statistics have not seen
 * (the table analyzed while it held a few events, then thousands more written, as in a burst
 * before autovacuum comes round): the claim takes the oldest due events of merchants nobody else
 * holds, and it reads the backlog only through its indexes, in their order (the held events
 * through webhook_events_sending, the due ones through webhook_events_due), never with a bitmap
 * or sequential scan of every event. (Without the claim's setting, PostgreSQL 15 took a bitmap
 * scan here.)
 */
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { WebhookDeliveries } from "../../src/Webhooks/Deliveries.js"
import { CLAIM, CLAIM_PLAN } from "../../src/Webhooks/DeliveriesRepo.js"
import { inProcess } from "../support/in-process.js"

const DeliveriesTest = inProcess(WebhookDeliveries.Default)

const OTHER_PROCESS = "another-process"

/** A merchant without a webhook URL; its id. */
const merchant = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient
  const id = crypto.randomUUID()
  yield* sql`INSERT INTO merchants (id, name, webhook_secret) VALUES (${id}, ${`m-${id}`}, 's')`
  return id
})

/** `count` events of the merchant, the first due `dueMinutesAgo` minutes ago, each a millisecond after the one before. */
const events = (merchantId: string, count: number, dueMinutesAgo: number, status: "pending" | "sending" = "pending") =>
  Effect.flatMap(
    PgClient.PgClient,
    (sql) =>
      sql`INSERT INTO webhook_events (id, merchant_id, event_type, body, delivery_status, lease_owner, lease_until, next_attempt_at)
        SELECT gen_random_uuid(), ${merchantId}, 'balance.deposited', '{}', ${status},
          CASE WHEN ${status} = 'sending' THEN ${OTHER_PROCESS} END,
          CASE WHEN ${status} = 'sending' THEN now() + interval '1 minute' END,
          now() - make_interval(mins => ${dueMinutesAgo}) + make_interval(secs => n / 1000.0)
        FROM generate_series(1, ${count}) AS n`
  )

/** Every scan of webhook_events in a plan (EXPLAIN's JSON): its node type and index. */
const scansOf = (plan: unknown): Array<{ readonly type: string; readonly index: string | undefined }> => {
  const scans: Array<{ readonly type: string; readonly index: string | undefined }> = []
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk)
    if (typeof node !== "object" || node === null) return
    const record = node as Record<string, unknown>
    if (record["Relation Name"] === "webhook_events" && typeof record["Node Type"] === "string" && record["Node Type"].endsWith("Scan")) {
      scans.push({ type: record["Node Type"], index: typeof record["Index Name"] === "string" ? record["Index Name"] : undefined })
    }
    Object.values(record).forEach(walk)
  }
  walk(plan)
  return scans
}

layer(DeliveriesTest, { timeout: 60_000, excludeTestServices: true })("claiming webhook events", (it) => {
  it.effect("takes the oldest due events of a merchant nobody else holds, through the indexes alone, under a backlog the statistics have not seen", () =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const deliveries = yield* WebhookDeliveries
      const free = yield* merchant
      const held = yield* merchant
      // what the statistics see: a few events, nearly all retries scheduled for later, in no order
      yield* events(free, 2, 120)
      yield* sql`INSERT INTO webhook_events (id, merchant_id, event_type, body, next_attempt_at)
                 SELECT gen_random_uuid(), ${free}, 'balance.deposited', '{}', now() + random() * interval '5 hours'
                 FROM generate_series(1, 200)`
      yield* sql`ANALYZE webhook_events`
      // then the backlog: thousands due, thousands scheduled for later, a few held by another process
      yield* events(free, 4_000, 60)
      yield* events(held, 4_000, 30)
      yield* events(free, 4_000, -300)
      yield* events(held, 3, -1, "sending")

      const params = [[], [], "this-process", 4, 256, 128, 10, 30, crypto.randomUUID()]
      const [explained] = yield* sql.withTransaction(
        Effect.zipRight(sql.unsafe(`SELECT ${CLAIM_PLAN}`), sql.unsafe<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${CLAIM}`, params))
      )
      const scans = scansOf(explained!["QUERY PLAN"])
      expect(scans.filter((scan) => scan.type !== "Index Scan" && scan.type !== "Index Only Scan")).toEqual([])
      expect(scans.map((scan) => scan.index)).toContain("webhook_events_sending")
      expect(scans.map((scan) => scan.index)).toContain("webhook_events_due")

      const { events: claimed } = yield* deliveries.claim({ owner: "this-process", free: 10, perMerchant: 4, held: new Map(), leaseSeconds: 30 })
      // the due ones were written in the order they fell due (the claim moved the next attempt of those it took)
      const oldest = yield* sql<{ id: string }>`
        SELECT id FROM webhook_events WHERE merchant_id = ${free} AND NOT (delivery_status = 'pending' AND next_attempt_at > now())
        ORDER BY seq LIMIT 4`
      expect(claimed.map((e) => e.merchantId)).toEqual([free, free, free, free])
      expect(claimed.map((e) => e.id).sort()).toEqual(oldest.map((row) => row.id).sort())
    }))
})
