/**
 * What bench/stream's feed clients (clients.mjs) check in each frame, and the measured window's
 * record of the frames. Every `changes` frame must start right after the client's previous cursor
 * (cursor - previous cursor == number of changes in the frame): a gap is counted otherwise.
 *
 * Frames are kept as Buffers (no string conversion, no JSON.parse of the whole frame): the header
 * `{"type":"changes","epoch":E,"cursor":C,` is read from the first bytes and the changes are counted
 * by their `{"op":` openings. The count is cached per (cursor, frame length): the server sends
 * the same bytes to every caught-up client, so each distinct frame is scanned once.
 */
import { writeFileSync } from "node:fs"

export const now = () => performance.timeOrigin + performance.now()
const OP = Buffer.from("{\"op\":")

/** The protocol's breaches so far: frames that did not follow the client's cursor, frames not of the protocol. */
export const checks = { gaps: 0, gapExamples: [], unexpected: 0 }

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

export const onMessage = (client, index) => (data) => {
  const at = now()
  const head = data.toString("latin1", 0, Math.min(100, data.length))
  const m = HEADER.exec(head)
  if (m === null) {
    checks.unexpected++
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
    checks.unexpected++
    return
  }
  if (type !== "changes") {
    checks.unexpected++
    return
  }
  const cursor = Number(m[3])
  const count = countChanges(data, cursor)
  const from = cursor - count + 1
  if (!client.hello || from !== client.position + 1) {
    checks.gaps++
    if (checks.gapExamples.length < 10) checks.gapExamples.push({ client: index, position: client.position, from, cursor, count })
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

/** Starts the measured window; with `record`, the recording client's frames are kept. */
export const startWindow = (record) => {
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

/** Ends the measured window: what was delivered in it. */
export const endWindow = () => {
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
}

/**
 * Per-change latency of the window's frames: `times[i]` is the commit (or broadcast) time of
 * change `seq0 + i`, ms since epoch.
 */
export const latencyOf = (seq0, times) => {
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
}

/** The recording client's frames of the window, in `file`.json (their timing) and `file`.bin (their bytes), for the bare's replay. */
export const saveFrames = (file, epoch) => {
  const t0 = recorded[0]?.at ?? 0
  const meta = recorded.map((f) => ({ offsetMs: f.at - t0, from: f.from, to: f.to, length: f.data.length }))
  writeFileSync(file + ".json", JSON.stringify({ epoch, frames: meta }))
  writeFileSync(file + ".bin", Buffer.concat(recorded.map((f) => f.data)))
  return { frames: meta.length, bytes: meta.reduce((a, f) => a + f.length, 0) }
}
