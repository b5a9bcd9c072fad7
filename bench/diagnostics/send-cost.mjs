/**
 * bench/diagnostics/send-cost: the CPU cost, in the sending process, of one `ws` send of a feed frame
 * to one client, by how the frame is held: a flat string, a string built by concatenation (as
 * Stream.ts changesFrame builds it), or a Buffer encoded once. Isolates the per-client encoding
 * cost of ws.send(string) from everything else the service does.
 *
 *   node bench/diagnostics/send-cost.mjs [--clients 200] [--frames 300] [--changes 100]
 *
 * A `ws` server in this process, the clients in a child process (they only count bytes). Each
 * frame: --changes changes shaped like the synthetic catalogue's (about 730 bytes each, some
 * non-ASCII names such as "★ Karambit" and "StatTrak™"). Frames are sent to every client, 20 per
 * second, and the server's CPU time (process.cpuUsage) per send is printed per mode.
 */
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { WebSocket, WebSocketServer } from "ws"
import { argOptions, log, round, sleep } from "../lib/harness.mjs"

if (process.argv[2] === "--child") {
  const [url, n] = [process.argv[3], Number(process.argv[4])]
  let bytes = 0
  let open = 0
  for (let i = 0; i < n; i++) {
    const ws = new WebSocket(url, { skipUTF8Validation: true })
    ws.on("open", () => {
      if (++open === n) process.send({ open })
    })
    ws.on("message", (d) => {
      bytes += d.length
    })
  }
  process.on("message", () => process.send({ bytes }))
} else {
  const opts = argOptions(process.argv.slice(2), { clients: 200, frames: 300, changes: 100 })
  const item = (i) =>
    JSON.stringify({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      market_hash_name: i % 7 === 0
        ? `★ Karambit | Doppler (Factory New)`
        : i % 5 === 0
        ? `StatTrak™ AK-47 | Redline (Field-Tested)`
        : `AK-47 | Redline (Field-Tested)`,
      image_url: `https://community.cloudflare.steamstatic.com/economy/image/${"x".repeat(120)}`,
      price: 12.34 + i,
      exterior: "Field-Tested",
      exterior_code: "FT",
      float: 0.2345678,
      paint_seed: 661,
      paint_index: 282,
      stattrak: i % 5 === 0,
      souvenir: false,
      delivery_type: "instant",
      estimated_delivery_minutes: null,
      stickers: [{ slot: 0, name: "Sticker | Crown (Foil)", sticker_id: "1234", image_url: null, wear: null }],
      has_stickers: true,
      stickers_count: 1,
      type: "rifle",
      rarity: "Classified",
      rarity_color: "#d32ce6",
      collection: "The Phoenix Collection"
    })
  const changesFrame = (k) => {
    let body = ""
    for (let i = 0; i < opts.changes; i++) body += (i === 0 ? "" : ",") + `{"op":"upsert","item":${item(k * opts.changes + i)}}`
    return `{"type":"changes","epoch":1,"cursor":${(k + 1) * opts.changes},"changes":[${body}]}`
  }
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" })
  await new Promise((r) => wss.once("listening", r))
  const child = fork(fileURLToPath(import.meta.url), ["--child", `ws://127.0.0.1:${wss.address().port}`, String(opts.clients)])
  await new Promise((r) => child.once("message", r))
  const sockets = [...wss.clients]
  const sample = changesFrame(0)
  log(`send-cost: ${sockets.length} clients, ${opts.frames} frames of ${opts.changes} changes (${Buffer.byteLength(sample)} bytes), 20 frames/s`)
  const modes = {
    "string (concatenated, as changesFrame)": (k) => changesFrame(k),
    "string (flat)": (k) => Buffer.from(changesFrame(k)).toString("utf8"),
    "Buffer, encoded once": (k) => Buffer.from(changesFrame(k))
  }
  for (let round_ = 0; round_ < 2; round_++) {
    for (const [name, make] of Object.entries(modes)) {
      const frames = Array.from({ length: opts.frames }, (_, k) => make(k))
      await sleep(500)
      const cpu0 = process.cpuUsage()
      for (const frame of frames) {
        for (const ws of sockets) ws.send(frame, { binary: false })
        await sleep(50)
      }
      const cpu = process.cpuUsage(cpu0)
      const sends = frames.length * sockets.length
      log(
        `  ${name.padEnd(40)} ${String(round((cpu.user + cpu.system) / sends, 2)).padStart(7)} µs CPU per send` +
          ` (${round((cpu.user + cpu.system) / sends / opts.changes * 1000)} ns per delivered change; includes 50 ms sleeps' idle overhead)`
      )
    }
  }
  child.kill()
  wss.close()
}
