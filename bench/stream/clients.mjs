/**
 * bench/stream clients: N WebSocket feed clients in one process (forked by run.mjs, driven over
 * IPC). Each client checks the protocol as it goes: `hello` first, then every `changes` frame must
 * start right after the previous cursor (cursor - previous cursor == number of changes in the
 * frame), so "every change delivered" is checked per client, not sampled (frames.mjs).
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
import WebSocket from "ws"
import { checks, endWindow, latencyOf, now, onMessage, saveFrames, startWindow } from "./frames.mjs"

/** @type {Array<{ws: WebSocket, position: number, epoch: number, hello: boolean, closed: boolean, code?: number}>} */
const clients = []
const closeCodes = {}

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
    return {
      open: openCount,
      closed: clients.length - openCount,
      min,
      max,
      gaps: checks.gaps,
      gapExamples: checks.gapExamples,
      closeCodes,
      unexpected: checks.unexpected
    }
  },
  window({ action, record = false }) {
    return action === "start" ? startWindow(record) : endWindow()
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
    return latencyOf(seq0, times)
  },
  saveFrames({ file }) {
    return saveFrames(file, clients[0]?.epoch)
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
