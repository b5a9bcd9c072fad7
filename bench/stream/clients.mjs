/**
 * bench/stream clients: N WebSocket feed clients in one process (forked by run.mjs, driven over
 * IPC). Each client checks the protocol as it goes: `hello` first, then every `changes` frame must
 * start right after the previous cursor (cursor - previous cursor == number of changes in the
 * frame), so "every change delivered" is checked per client, not sampled.
 *
 * Frames are kept as Buffers (no string conversion, no JSON.parse of the whole frame): the header
 * `{"type":"changes","epoch":E,"cursor":C,` is read from the first bytes and the changes are counted
 * by their `{"op":` openings. The count is cached per (cursor, frame length): the server sends
 * the same bytes to every caught-up client, so each distinct frame is scanned once.
 *
 * Messages (request {id, cmd, ...}, reply {replyTo: id, ...}):
 *   connect   {url, headers, n, cursor, epoch, catchUpTo, parallel}  opens n clients; the first one
 *             with the given cursor, caught up to catchUpTo (resuming if closed as a slow consumer),
 *             the others each with the freshest position any open client has reached (a valid
 *             resume point, so nobody replays a long backlog)
 *   status    -> positions, open/closed counts, gaps, close codes
 *   window    {action: "start" | "end", record}  measured window; `record` keeps client 0's frames
 *   waitPosition {target, timeoutMs}  until every open client is at target or beyond
 *   latency   {origins: [seq0, Float64Array-ish times]}  per-change latency of the window's frames
 *   saveFrames {file}  client 0's frames of the window (for the bare baseline's replay)
 *   close
 */
import { writeFileSync } from "node:fs"
import WebSocket from "ws"

const now = () => performance.timeOrigin + performance.now()
const OP = Buffer.from("{\"op\":")

/** @type {Array<{ws: WebSocket, position: number, epoch: number, hello: boolean, closed: boolean, code?: number}>} */
const clients = []
let gaps = 0
let gapExamples = []
const closeCodes = {}
let unexpected = 0

// the measured window
let windowOn = false
let windowStart = 0
let windowEnd = 0
let deliveredInWindow = 0
let framesInWindow = 0
let bytesInWindow = 0
let recordFrames = false
let recorded = []
// per message in the window: first seq, last seq, receive time
let recCap = 1 << 20
let recFrom = new Float64Array(recCap)
let recTo = new Float64Array(recCap)
let recAt = new Float64Array(recCap)
let recN = 0
const pushRec = (from, to, at) => {
  if (recN === recCap) {
    recCap *= 2
    const grow = (a) => {
      const b = new Float64Array(recCap)
      b.set(a)
      return b
    }
    recFrom = grow(recFrom)
    recTo = grow(recTo)
    recAt = grow(recAt)
  }
  recFrom[recN] = from
  recTo[recN] = to
  recAt[recN] = at
  recN++
}

const countCache = new Map()
const countChanges = (buf, cursor) => {
  const cached = countCache.get(cursor)
  if (cached !== undefined && cached.length === buf.length) return cached.count
  let count = 0
  let i = buf.indexOf(OP, 0)
  while (i >= 0) {
    count++
    i = buf.indexOf(OP, i + OP.length)
  }
  countCache.set(cursor, { length: buf.length, count })
  if (countCache.size > 20_000) countCache.delete(countCache.keys().next().value)
  return count
}

const HEADER = /^\{"type":"(\w+)"(?:,"epoch":(\d+),"cursor":(\d+))?/

const onMessage = (client, index) => (data) => {
  const at = now()
  const head = data.toString("latin1", 0, Math.min(100, data.length))
  const m = HEADER.exec(head)
  if (m === null) {
    unexpected++
    return
  }
  const type = m[1]
  if (type === "hello") {
    client.hello = true
    client.position = Number(m[3])
    client.epoch = Number(m[2])
    return
  }
  if (type === "heartbeat") return
  if (type === "reset") {
    unexpected++
    return
  }
  if (type !== "changes") {
    unexpected++
    return
  }
  const cursor = Number(m[3])
  const count = countChanges(data, cursor)
  const from = cursor - count + 1
  if (!client.hello || from !== client.position + 1) {
    gaps++
    if (gapExamples.length < 10) gapExamples.push({ client: index, position: client.position, from, cursor, count })
  }
  client.position = cursor
  if (windowOn) {
    deliveredInWindow += count
    framesInWindow++
    bytesInWindow += data.length
    pushRec(from, cursor, at)
    if (recordFrames && client.recorder) recorded.push({ at, from, to: cursor, data: Buffer.from(data) })
  }
}

const freshest = () => {
  let best
  for (const c of clients) if (!c.closed && c.hello && (best === undefined || c.position > best.position)) best = c
  return best
}

const open = (url, headers, cursor, epoch) =>
  new Promise((resolve) => {
    const index = clients.length
    const client = { ws: undefined, position: cursor, epoch, hello: false, closed: false }
    clients.push(client)
    const u = `${url}?cursor=${cursor}&epoch=${epoch}`
    const ws = new WebSocket(u, { headers, perMessageDeflate: false, skipUTF8Validation: true, maxPayload: 256 * 1024 * 1024 })
    client.ws = ws
    ws.on("message", onMessage(client, index))
    let settled = false
    const done = (ok) => {
      if (!settled) {
        settled = true
        resolve(ok)
      }
    }
    ws.on("message", function first() {
      ws.off("message", first)
      done(true)
    })
    ws.on("error", (e) => {
      client.error = String(e.message ?? e)
      done(false)
    })
    ws.on("unexpected-response", (req, res) => {
      client.error = `HTTP ${res.statusCode}`
      res.resume()
      done(false)
    })
    ws.on("close", (code) => {
      client.closed = true
      client.code = code
      closeCodes[code] = (closeCodes[code] ?? 0) + 1
      done(false)
    })
  })

const handlers = {
  async connect({ url, headers, n, cursor, epoch, catchUpTo = 0, parallel = 50 }) {
    const t0 = now()
    let failed = 0
    const firstErrors = []
    // the first client resumes from the dump's cursor and catches up to `catchUpTo` (the head)
    // before the others open from its position; if the server closes it as a slow consumer while
    // it catches up, it resumes from its last cursor (CONTRACT 3), as a real client would
    if (clients.length === 0) {
      let first
      for (let attempt = 0;; attempt++) {
        const from = first?.position ?? cursor
        if (!(await open(url, headers, from, epoch)) && attempt > 20) {
          throw new Error(`first client failed: ${clients[clients.length - 1].error ?? clients[clients.length - 1].code}`)
        }
        if (first) first.replaced = true
        first = clients[clients.length - 1]
        while (!first.closed && first.position < catchUpTo) await new Promise((r) => setTimeout(r, 20))
        if (!first.closed) break
      }
      first.recorder = true
      // the replaced attempts are not clients of the measurement
      for (let i = clients.length - 1; i >= 0; i--) if (clients[i].replaced) clients.splice(i, 1)
      for (const code of Object.keys(closeCodes)) delete closeCodes[code]
      n--
    }
    let started = 0
    const worker = async () => {
      while (started < n) {
        started++
        const src = freshest()
        const ok = await open(url, headers, src?.position ?? cursor, src?.epoch ?? epoch)
        if (!ok) {
          failed++
          const c = clients[clients.length - 1]
          if (firstErrors.length < 5) firstErrors.push(c.error ?? `closed ${c.code}`)
        }
      }
    }
    await Promise.all(Array.from({ length: parallel }, worker))
    return { connected: clients.filter((c) => !c.closed).length, failed, firstErrors, ms: now() - t0 }
  },
  status() {
    let min = Infinity
    let max = -Infinity
    let openCount = 0
    for (const c of clients) {
      if (c.closed) continue
      openCount++
      min = Math.min(min, c.position)
      max = Math.max(max, c.position)
    }
    return { open: openCount, closed: clients.length - openCount, min, max, gaps, gapExamples, closeCodes, unexpected }
  },
  window({ action, record = false }) {
    if (action === "start") {
      windowOn = true
      windowStart = now()
      deliveredInWindow = 0
      framesInWindow = 0
      bytesInWindow = 0
      recN = 0
      recordFrames = record
      recorded = []
      return { at: windowStart, cpu: process.cpuUsage() }
    }
    windowOn = false
    windowEnd = now()
    return {
      at: windowEnd,
      seconds: (windowEnd - windowStart) / 1000,
      delivered: deliveredInWindow,
      frames: framesInWindow,
      bytes: bytesInWindow,
      recordedFrames: recorded.length,
      cpu: process.cpuUsage()
    }
  },
  async waitPosition({ target, timeoutMs }) {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const behind = clients.filter((c) => !c.closed && c.position < target).length
      if (behind === 0) return { ok: true }
      if (Date.now() > deadline) return { ok: false, behind }
      await new Promise((r) => setTimeout(r, 20))
    }
  },
  /** origins: {seq0, times: number[]} where times[i] is the commit (or broadcast) time of seq0 + i, ms since epoch. */
  latency({ seq0, times }) {
    // 0.05 ms buckets up to 60 s
    const BUCKET = 0.05
    const hist = new Float64Array(Math.ceil(60_000 / BUCKET) + 1)
    let total = 0
    let missing = 0
    let max = -Infinity
    let min = Infinity
    let sum = 0
    for (let r = 0; r < recN; r++) {
      const at = recAt[r]
      for (let seq = recFrom[r]; seq <= recTo[r]; seq++) {
        const origin = times[seq - seq0]
        if (origin === undefined || origin === null) {
          missing++
          continue
        }
        const lat = at - origin
        if (lat > max) max = lat
        if (lat < min) min = lat
        sum += lat
        total++
        hist[Math.min(hist.length - 1, Math.max(0, Math.floor(lat / BUCKET)))]++
      }
    }
    const pct = (p) => {
      const rank = Math.ceil((p / 100) * total)
      let acc = 0
      for (let i = 0; i < hist.length; i++) {
        acc += hist[i]
        if (acc >= rank) return (i + 0.5) * BUCKET
      }
      return NaN
    }
    // frame-level view (one sample per frame delivery): what a client sees per message
    return { changes: total, missing, min, max, mean: sum / total, p50: pct(50), p90: pct(90), p99: pct(99), p999: pct(99.9) }
  },
  saveFrames({ file }) {
    const t0 = recorded[0]?.at ?? 0
    const meta = recorded.map((f) => ({ offsetMs: f.at - t0, from: f.from, to: f.to, length: f.data.length }))
    writeFileSync(file + ".json", JSON.stringify({ epoch: clients[0]?.epoch, frames: meta }))
    writeFileSync(file + ".bin", Buffer.concat(recorded.map((f) => f.data)))
    return { frames: meta.length, bytes: meta.reduce((a, f) => a + f.length, 0) }
  },
  async close() {
    for (const c of clients) if (!c.closed) c.ws.terminate()
    return {}
  }
}

process.on("message", async (msg) => {
  try {
    const result = await handlers[msg.cmd](msg)
    process.send({ replyTo: msg.id, ...result })
  } catch (e) {
    process.send({ replyTo: msg.id, error: String(e?.stack ?? e) })
  }
})
process.send({ ready: true })
