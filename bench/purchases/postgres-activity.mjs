/**
 * What PostgreSQL did during bench/purchases' measured windows: the states of the backends of the
 * database under test (pg_stat_activity sampled every 10 ms: executing, waiting for a lock, or
 * idle in transaction = waiting for the client's next statement), and the WAL the server wrote.
 */
import { connectClient, PG_SERVER_URL, round, sleep, withAdminClient } from "../lib/harness.mjs"

/** Mean count of the backends of `database` in each state, between `start()` and `stop()`. */
export const activitySampler = async (database) => {
  const client = await connectClient(PG_SERVER_URL)
  let running = false
  let samples = 0
  const counts = {}
  let loop
  const start = () => {
    running = true
    samples = 0
    for (const k of Object.keys(counts)) delete counts[k]
    loop = (async () => {
      while (running) {
        const rows = (await client.query(
          `SELECT state, coalesce(wait_event_type, '') AS wt, coalesce(wait_event, '') AS we, count(*)::int AS n
           FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()
           GROUP BY 1, 2, 3`,
          [database]
        )).rows
        samples++
        for (const r of rows) {
          const key = r.state === "active" ?
            (r.wt === "" ? "active: running" : `active: waiting ${r.wt}/${r.we}`)
            : r.state === "idle in transaction" ?
            "idle in transaction (waiting for the client)"
            : r.state === "idle"
            ? (r.wt === "Client" ? "idle (no transaction)" : `idle ${r.wt}/${r.we}`)
            : r.state
          counts[key] = (counts[key] ?? 0) + r.n
        }
        await sleep(10)
      }
    })()
  }
  const stop = async () => {
    running = false
    await loop
    return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, round(v / Math.max(1, samples), 2)]).sort((a, b) => b[1] - a[1]))
  }
  return { start, stop, end: () => client.end() }
}

/**
 * The server's WAL so far: bytes (from the insert position), records, full-page images and flushes
 * (pg_stat_wal, whose counters backends report within about a second). The server is shared.
 */
export const walStats = () =>
  withAdminClient((c) =>
    c.query(
      `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS bytes, wal_records::float8 AS records, wal_fpi::float8 AS fpi,
          wal_sync::float8 AS syncs FROM pg_stat_wal`
    )
  ).then((q) => q.rows[0])
export const walDelta = (a, b) => ({ bytes: b.bytes - a.bytes, records: b.records - a.records, fpi: b.fpi - a.fpi, syncs: b.syncs - a.syncs })
