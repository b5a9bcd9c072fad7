/**
 * bench/stream external change writer (--source external): writes catalogue changes into the
 * change log at a fixed rate, as the supplier-sync leader of another node would (CONTRACT 1: one
 * leader writes the log, every node's engine tails it), so the offered rate does not depend on the
 * event loop of the service under test, and each change's commit time is known exactly.
 *
 * Every 100 ms (the simulator's tick) one transaction with rate/10 changes, the simulator's mix:
 * half price changes of live items, a quarter delistings, a quarter relistings of delisted items.
 * The statements are ChangeLog.apply's: the items table, then UPDATE catalogue_state head_seq,
 * INSERT catalogue_changes, pg_notify, COMMIT.
 *
 * Each batch's feed frame (as Engine/Stream build it) is kept, for the bare baseline's replay.
 * Forked (DATABASE_URL, RATE in the environment), IPC: start {} / pause {} / stop {} / batches {}
 *   -> {batches: [[from, to, beginMs, commitMs]]}; saveFrames {file, fromMs, toMs}
 */
import { writeFileSync } from "node:fs"
import pg from "pg"
// the item JSON as ChangeLog.apply stores it (canonical field order, ASCII with \u escapes), so the
// engines read what a leader of the service would have written
import { serialise } from "../../dist/src/Domain/CatalogItem.js"

const now = () => performance.timeOrigin + performance.now()
const TICK_MS = 100
const rate = Number(process.env.RATE)
const client = new pg.Client({ connectionString: process.env.DATABASE_URL })
await client.connect()

// live items (id -> item JSON) and delisted ones
const rows = (await client.query("SELECT id, item FROM catalogue_items WHERE status = 'active'")).rows
const live = rows.map((r) => ({ id: r.id, item: JSON.parse(r.item) }))
const delisted = []
let seed = 12345
const rng = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  return seed / 0x80000000
}

let running = false
let loop
const batches = []

const tick = async (n) => {
  const upserts = []
  const removes = []
  const changes = []
  for (let i = 0; i < n; i++) {
    const roll = rng()
    if (roll < 0.5 || (roll >= 0.75 && delisted.length === 0)) {
      const e = live[Math.floor(rng() * live.length)]
      e.item.price = Math.max(0.03, Math.round(e.item.price * 100 * (0.9 + rng() * 0.2)) / 100)
      const json = serialise(e.item)
      upserts.push([e.id, json, Math.round(e.item.price * 100)])
      changes.push(["upsert", e.id, json])
    } else if (roll < 0.75) {
      const k = Math.floor(rng() * live.length)
      const e = live[k]
      live[k] = live[live.length - 1]
      live.pop()
      delisted.push(e)
      removes.push(e.id)
      changes.push(["remove", e.id, null])
    } else {
      const e = delisted.splice(Math.floor(rng() * delisted.length), 1)[0]
      live.push(e)
      const json = serialise(e.item)
      upserts.push([e.id, json, Math.round(e.item.price * 100)])
      changes.push(["upsert", e.id, json])
    }
  }
  const begin = now()
  await client.query("BEGIN")
  if (upserts.length > 0) {
    await client.query(
      `UPDATE catalogue_items c SET item = u.item, price_cents = u.price, status = 'active', updated_at = now()
       FROM unnest($1::uuid[], $2::text[], $3::bigint[]) AS u(id, item, price) WHERE c.id = u.id`,
      [upserts.map((u) => u[0]), upserts.map((u) => u[1]), upserts.map((u) => u[2])]
    )
  }
  if (removes.length > 0) {
    await client.query(`UPDATE catalogue_items SET status = 'removed', updated_at = now() WHERE id = ANY($1::uuid[])`, [removes])
  }
  const head = (await client.query(`UPDATE catalogue_state SET head_seq = head_seq + $1 RETURNING epoch, head_seq AS head`, [changes.length])).rows[0]
  const last = Number(head.head)
  const first = last - changes.length + 1
  await client.query(
    `INSERT INTO catalogue_changes (seq, epoch, op, item_id, item)
     SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::uuid[], $5::text[])`,
    [changes.map((_, i) => first + i), changes.map(() => head.epoch), changes.map((c) => c[0]), changes.map((c) => c[1]), changes.map((c) => c[2])]
  )
  await client.query(`SELECT pg_notify('catalogue_changes', $1)`, [String(last)])
  await client.query("COMMIT")
  const committed = now()
  batches.push([first, last, begin, committed])
  // the frame the feed sends for this batch (Engine changeJson + Stream changesFrame), for the bare baseline
  let body = ""
  for (let i = 0; i < changes.length; i++) {
    const [op, id, json] = changes[i]
    body += (i === 0 ? "" : ",") + (op === "upsert" ? `{"op":"upsert","item":${json}}` : `{"op":"remove","id":"${id}"}`)
  }
  frames.push({ at: committed, from: first, to: last, data: Buffer.from(`{"type":"changes","epoch":${head.epoch},"cursor":${last},"changes":[${body}]}`) })
  epoch = head.epoch
}
const frames = []
let epoch

const start = () => {
  running = true
  written = 0
  loop = (async () => {
    const t0 = now()
    let ticks = 0
    while (running) {
      ticks++
      const wait = t0 + ticks * TICK_MS - now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      // rate by the wall clock: a late tick writes what is owed
      const n = Math.floor((rate * (now() - t0)) / 1000 - written)
      if (n > 0) {
        await tick(n)
        written += n
      }
    }
  })()
}
let written = 0

process.on("message", async (msg) => {
  try {
    if (msg.cmd === "saveFrames") {
      // the frames committed in [fromMs, toMs], in the clients' recording format
      const chosen = frames.filter((f) => f.at >= msg.fromMs && f.at <= msg.toMs)
      const t0 = chosen[0]?.at ?? 0
      writeFileSync(
        msg.file + ".json",
        JSON.stringify({ epoch, frames: chosen.map((f) => ({ offsetMs: f.at - t0, from: f.from, to: f.to, length: f.data.length })) })
      )
      writeFileSync(msg.file + ".bin", Buffer.concat(chosen.map((f) => f.data)))
      process.send({ replyTo: msg.id, frames: chosen.length, bytes: chosen.reduce((a, f) => a + f.data.length, 0) })
    } else if (msg.cmd === "batches") {
      process.send({ replyTo: msg.id, batches, written })
    } else if (msg.cmd === "start") {
      start()
      process.send({ replyTo: msg.id })
    } else if (msg.cmd === "stop" || msg.cmd === "pause") {
      running = false
      await loop
      process.send({ replyTo: msg.id, batches, written })
    }
  } catch (e) {
    process.send({ replyTo: msg.id, error: String(e?.stack ?? e) })
  }
})
process.send({ ready: true, live: live.length })
