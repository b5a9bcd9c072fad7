/**
 * bench/webhooks, case 1c: the live merchants' deliveries per second while the same process also
 * sends to merchants no delivery can reach: 20 without a webhook URL and one whose stored URL
 * carries user info (both refused before any byte, the attempt ending inside the sender's loop),
 * one whose port refuses connections, one answering 500 and one that never answers (its attempts
 * time out: WEBHOOK_TIMEOUT_SECONDS, 10 s by default). 10 live merchants by default: together they
 * take fewer attempts than WEBHOOK_CONCURRENCY (10 × 4 of 64), as a process's merchants mostly do;
 * with the limit full, the loop stops at it before a refusal's end can re-enter it (100 live
 * merchants hid the crash of a re-entered loop). In alternating rounds: the live events alone (the
 * all-live case), then the same live events with `othersEach` events of each other merchant spread
 * among them, in one statement. Rate = live events / (last live arrival - commit). After each
 * mixed round the others' events still due are marked failed and the hanging receiver answers, so
 * that no round inherits the last one's retries.
 */
import { admin, cpuMs, freePort, log, pgBackendCpu, pgCpuDelta, round, sleep, waitQuiet } from "../lib/harness.mjs"
import { depositEvent } from "./bodies.mjs"

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Restarts of the webhook sender's supervised fibers so far (/ops/fibers). */
const senderRestarts = async (service) => {
  const res = await fetch(`${service.opsUrl}/ops/fibers`)
  const { fibers } = await res.json()
  return fibers.filter((f) => f.name.startsWith("webhook-")).reduce((sum, f) => sum + f.restarts, 0)
}

/** The merchants no delivery reaches; their ids. */
const unreachableMerchants = async ({ service, db, receiverUrl }) => {
  const create = async (name, url) => (await admin(service, "/admin/merchants", { name, webhook_url: url })).merchant_id
  const withoutUrl = []
  for (let i = 0; i < 20; i++) withoutUrl.push(await create(`hook-none-${i}`, null))
  // stored before the setters refused user info in a URL (the admin API refuses it now)
  const withCredentials = await create("hook-credentials", receiverUrl("/m/credentials"))
  await db.query("UPDATE merchants SET webhook_url = $1 WHERE id = $2", [
    receiverUrl("/m/credentials").replace("http://", "http://bench:secret@"),
    withCredentials
  ])
  const refusing = await create("hook-refusing", `http://127.0.0.1:${await freePort()}/refused`)
  const failing = await create("hook-500", receiverUrl("/fail/500"))
  const hanging = await create("hook-hanging", receiverUrl("/hang/forever"))
  return [...withoutUrl, withCredentials, refusing, failing, hanging]
}

/** `live` with `others` spread evenly among them. */
const interleave = (live, others) => {
  const out = []
  const every = Math.max(1, Math.floor(live.length / Math.max(1, others.length)))
  let o = 0
  live.forEach((event, i) => {
    out.push(event)
    if (i % every === every - 1 && o < others.length) out.push(others[o++])
  })
  return [...out, ...others.slice(o)]
}

export const mixedThroughput = async (
  { service, db, databaseName, receiver, receiverUrl, makeEvents, insertEvents, waitArrivals },
  { rounds, live, events, othersEach }
) => {
  const unreachable = await unreachableMerchants({ service, db, receiverUrl })
  const othersOf = () => unreachable.flatMap((merchantId) => Array.from({ length: othersEach }, () => ({ ...depositEvent(), merchantId })))
  /** The others' retries and held attempts end before the next round; then the hanging receiver hangs again. */
  const cleanUp = async () => {
    await receiver({ op: "hang", on: false })
    for (let left = 1; left > 0;) {
      await sleep(1000)
      const result = await db.query(
        `UPDATE webhook_events SET delivery_status = 'failed', lease_until = NULL, claim_token = NULL, lease_owner = NULL
         WHERE merchant_id = ANY($1::uuid[]) AND delivery_status IN ('pending', 'sending')`,
        [unreachable]
      )
      left = result.rowCount
    }
    await receiver({ op: "hang", on: true })
  }
  /** Live deliveries per second, and the CPU of the service and of PostgreSQL per live delivery (µs) until the last arrived. */
  const rate = async (what, batch) => {
    await waitQuiet(what)
    await receiver({ op: "reset" })
    const cpu0 = cpuMs(service.child.pid)
    const pg0 = await pgBackendCpu(databaseName)
    const t0 = Date.now()
    await insertEvents(batch)
    const status = await waitArrivals(events)
    const cpu = cpuMs(service.child.pid) - cpu0
    const pgCpu = pgCpuDelta(pg0, await pgBackendCpu(databaseName))
    return { perSecond: round((events * 1000) / (status.last - t0)), serviceUs: round((cpu * 1000) / events), postgresUs: round((pgCpu * 1000) / events) }
  }
  const restartsBefore = await senderRestarts(service)
  // a warm-up, not measured, as the other cases have (the mixed rounds', with the others' events)
  await receiver({ op: "reset" })
  await insertEvents(interleave(makeEvents(events / 2, live), othersOf()))
  await waitArrivals(events / 2)
  await cleanUp()
  const rows = []
  for (let round_ = 1; round_ <= rounds; round_++) {
    const allLive = await rate(`all-live round ${round_}`, makeEvents(events, live))
    await sleep(500)
    const mixed = await rate(`mixed round ${round_}`, interleave(makeEvents(events, live), othersOf()))
    await cleanUp()
    const row = {
      round: round_,
      allLive: allLive.perSecond,
      mixed: mixed.perSecond,
      ratio: round(mixed.perSecond / allLive.perSecond, 2),
      cpu: { allLive, mixed }
    }
    log(
      `  mixed, round ${round_}: live merchants ${mixed.perSecond}/s beside ${unreachable.length} unreachable ones (CPU per live delivery: service ${mixed.serviceUs} µs, PostgreSQL ${mixed.postgresUs} µs), all-live ${allLive.perSecond}/s (${allLive.serviceUs} and ${allLive.postgresUs} µs), ratio ${row.ratio}`
    )
    rows.push(row)
  }
  const restarts = (await senderRestarts(service)) - restartsBefore
  if (restarts > 0) log(`  WARNING: the webhook sender's fibers restarted ${restarts} times in this case`)
  return {
    live,
    unreachable: unreachable.length,
    events,
    othersEach,
    mixedMedian: median(rows.map((r) => r.mixed)),
    allLiveMedian: median(rows.map((r) => r.allLive)),
    ratioOfMedians: round(median(rows.map((r) => r.mixed)) / median(rows.map((r) => r.allLive)), 2),
    senderRestarts: restarts,
    rows
  }
}
