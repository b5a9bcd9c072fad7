/**
 * bench/stream's bare baseline of a scenario: for each --bare send mode, bare-server.mjs replays the
 * service window's frames at their timing to as many clients from a new client process; the same
 * figures, the latency from each broadcast's start, its window the replay.
 */
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { forkReady, freePort, rpc, sleep } from "../lib/harness.mjs"
import { STREAM_PATH } from "./feed.mjs"
import { printPhase } from "./report.mjs"
import { measureWindow, startClients } from "./window.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))

/** Into `result.bare`, by send mode; the client process in `s.clients` while it is open. */
export const measureBares = async (opts, s, { N, auth, epoch, framesFile }, result) => {
  result.bare = {}
  for (const mode of opts.bare.split(",").filter(Boolean)) {
    await sleep(2000)
    const port = await freePort()
    const { proc: bare, ready: info } = await forkReady(join(HERE, "bare-server.mjs"), [], {
      ...process.env,
      NODE_ENV: "production",
      FRAMES: framesFile,
      PORT: String(port),
      SEND: mode
    }, "bare")
    const call = rpc(bare)
    try {
      const clients = s.clients = await startClients("clients-bare")
      const c = await clients.call({
        cmd: "connect",
        url: `ws://127.0.0.1:${port}${STREAM_PATH}`,
        headers: auth,
        n: N,
        cursor: info.startCursor,
        epoch,
        parallel: opts.parallel
      })
      if (c.connected < N) throw new Error(`bare: only ${c.connected} clients connected`)
      await sleep(2000)
      const b = await measureWindow({
        clients,
        serverPid: bare.child.pid,
        during: async () => {
          const r = await call({ cmd: "replay" })
          const last = r.origins[r.origins.length - 1]
          return { origins: r.origins, headEnd: last[1], logged: last[1] - r.origins[0][0] + 1 }
        },
        headAtEnd: async (d) => d.headEnd,
        origins: async (d) => {
          const seq0 = d.origins[0][0]
          const times = []
          for (const [from, to, at] of d.origins) for (let s = from; s <= to; s++) times[s - seq0] = at
          return [{ name: "fromBroadcast", seq0, times }]
        }
      })
      result.bare[mode] = b
      printPhase(`bare (${mode})`, b)
      await clients.call({ cmd: "close" })
      await clients.stop()
      s.clients = undefined
    } finally {
      await bare.stop()
    }
  }
}
