/**
 * bench/catalogue's PostgreSQL: the run's database (fresh, or an earlier run's kept one), the sync
 * leader's lock held so that a service only follows, price changes written into the change log as
 * another node's leader would, and VACUUM after a populate.
 */
import pg from "pg"
import { PG_SERVER_URL } from "../lib/harness.mjs"

/** the sync leader's advisory lock key (src/Catalogue/Repo.ts) */
const LEADER_LOCK_KEY = 7_311_002

export const withClient = async (url, f) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

export const createDatabase = async (suffix = "", existing = undefined) => {
  const name = existing ?? `mps_bench_cat_${process.pid}${suffix}`
  if (existing === undefined) {
    await withClient(PG_SERVER_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => c.query(`CREATE DATABASE ${name}`)))
  }
  const url = new URL(PG_SERVER_URL)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: () => withClient(PG_SERVER_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  }
}

/** Holds the sync leader's advisory lock, so a service started meanwhile only follows. */
export const holdLeaderLock = async (url) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query("SELECT pg_advisory_lock($1)", [LEADER_LOCK_KEY])
  return { release: () => client.end() }
}

/**
 * Price changes of one cent (`delta` +1 or -1) to `n` random active items, or to the given ids,
 * written as ChangeLog.apply writes an upsert: the item row and its JSON (the price field
 * replaced), the log rows at the head, the notification; one transaction. Returns the ids.
 */
export const writePriceChanges = (url, { n, ids, delta }) =>
  withClient(url, async (c) => {
    const picked = ids === undefined
      ? `SELECT id FROM catalogue_items WHERE status = 'active' ORDER BY random() LIMIT ${Number(n)}`
      : `SELECT unnest($1::uuid[]) AS id`
    const result = await c.query(
      `
    WITH picked AS (${picked}),
    changed AS (
      UPDATE catalogue_items c SET price_cents = c.price_cents + (${Number(delta)}), updated_at = now(),
        item = regexp_replace(c.item, '"price":[0-9.]+', '"price":' || trim_scale((c.price_cents + (${Number(delta)}))::numeric / 100)::text)
      FROM picked WHERE c.id = picked.id RETURNING c.id, c.item),
    numbered AS (SELECT id, item, row_number() OVER () AS k FROM changed),
    head AS (UPDATE catalogue_state SET head_seq = head_seq + (SELECT count(*) FROM numbered) RETURNING epoch, head_seq),
    logged AS (
      INSERT INTO catalogue_changes (seq, epoch, op, item_id, item)
      SELECT head.head_seq - (SELECT count(*) FROM numbered) + numbered.k, head.epoch, 'upsert', numbered.id, numbered.item
      FROM numbered, head)
    SELECT numbered.id::text AS id, pg_notify('catalogue_changes', head.head_seq::text) FROM numbered, head`,
      ids === undefined ? [] : [ids]
    )
    return result.rows.map((r) => r.id)
  })

export const vacuum = async (db) => {
  const t0 = performance.now()
  await withClient(db.url, (c) => c.query("VACUUM ANALYZE catalogue_items").then(() => c.query("VACUUM ANALYZE catalogue_changes")))
  return performance.now() - t0
}
