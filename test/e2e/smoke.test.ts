import { spawn } from "node:child_process"
import { statSync } from "node:fs"
import { connect, createServer } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, SERVICE_ARGS } from "../support/paths.js"
import { freePorts, type RunningServer, startServer } from "../support/server.js"

/** Starts the service with `env` on free ports, expecting it to stop by itself: its exit code (null if it ran on for 45 s) and output. */
const startExpectingExit = async (env: Record<string, string>) => {
  const [port, opsPort] = await freePorts(2)
  const child = spawn(process.execPath, [...SERVICE_ARGS], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), OPS_PORT: String(opsPort), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (d: Buffer) => {
    output += d.toString()
  })
  child.stderr.on("data", (d: Buffer) => {
    output += d.toString()
  })
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      resolve(null)
    }, 45_000)
    child.on("exit", (c) => {
      clearTimeout(timer)
      resolve(c)
    })
  })
  return { code, output }
}

describe("smoke", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer()
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("a new merchant has a zero balance", async () => {
    const m = await server.createMerchant()
    const balance = await server.merchant(m.apiKey).call((client) => client.balance.getBalance())
    expect(balance).toEqual({ available: 0, on_hold: 0, total_deposited: 0, total_spent: 0, currency: "USD", deposit_addresses: { trc20: null, bep20: null } })
  })

  it.runIf(!process.env["DATABASE_URL"])(
    "a second process on the same embedded DATA_DIR stops with a message and exit 1 (both ran, and one's writes were lost)",
    async () => {
      const { code, output } = await startExpectingExit({ DATA_DIR: server.database.dataDir })
      expect(code).toBe(1)
      expect(output).toContain("is in use by another process")
      // the first one goes on
      await server.merchant((await server.createMerchant()).apiKey).call((client) => client.balance.getBalance())
    },
    60_000
  )

  it.runIf(!process.env["DATABASE_URL"])("the embedded database's directory is its owner's alone (it holds secrets; PGlite writes its files 0666)", () => {
    expect((statSync(`${server.database.dataDir}/pg`).mode & 0o777).toString(8)).toBe("700")
  })
})

describe("shutdown", () => {
  it(
    "a client that stalls in the middle of a request does not hold the process: SIGTERM ends it within SHUTDOWN_GRACE_SECONDS, and the drain tells its progress",
    async () => {
      const server = await startServer({ env: { SHUTDOWN_GRACE_SECONDS: "3", LOG_LEVEL: "info" } })
      const m = await server.createMerchant()
      // a body announced at 100 bytes, of which 10 come, on the public and on the ops listener
      const stalled = await Promise.all([`${server.baseUrl}/api/v1/merchant/buy`, `${server.opsUrl}/admin/merchants`].map(async (url) => {
        const { hostname, port, pathname } = new URL(url)
        const socket = connect(Number(port), hostname)
        await new Promise((resolve) => socket.once("connect", resolve))
        const token = pathname.startsWith("/admin") ? server.adminToken : m.apiKey
        socket.write(
          `POST ${pathname} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"item_id"`
        )
        socket.on("error", () => undefined)
        return socket
      }))
      await new Promise((resolve) => setTimeout(resolve, 300))
      const started = Date.now()
      const code = await server.stop("SIGTERM")
      const took = Date.now() - started
      for (const socket of stalled) socket.destroy()
      // exited on its own (the harness kills with SIGKILL only after 15 s) and cleanly
      expect({ code, inTime: took < 10_000 }).toEqual({ code: 0, inTime: true })
      // the log tells the drain as it goes: what it waits for (the stalled request), then its end
      const lines = server.output().split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>)
      const messages = lines.map((line) => String(line["message"]))
      const draining = lines.find((line) => line["message"] === "API draining")
      expect(draining?.["annotations"]).toMatchObject({ requests_unanswered: 1, grace_seconds: 3 })
      expect((draining?.["annotations"] as { connections_open: number }).connections_open).toBeGreaterThanOrEqual(1)
      const order = ["shutting down", "API draining", "API drained", "stopped"].map((m) => messages.findIndex((x) => x.startsWith(m)))
      expect(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!))).toBe(true)
    },
    30_000
  )
})

describe("start-up's garbage", () => {
  it("is collected once, after the engine's load of the reconciled catalogue and before /ready answers 200 (npm start passes --expose-gc)", async () => {
    const server = await startServer({ env: { LOG_LEVEL: "info" } })
    const readyAt = Date.now()
    try {
      const logLines = () => server.output().split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>)
      const collections = () => logLines().filter((line) => line["message"] === "start-up garbage collected")
      // the first dump is built after /ready: once it is, no other collection is to come
      for (let waited = 0; waited < 60_000 && !logLines().some((line) => line["message"] === "catalogue dump built"); waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      // on a new database the reconciliation and the engine's load of its result follow one
      // another: one collection, after the load, logged before /ready said 200
      expect(collections().map((line) => (line["annotations"] as Record<string, unknown>)["after"])).toEqual(["catalogue loaded"])
      expect(Date.parse(String(collections()[0]!["timestamp"]))).toBeLessThanOrEqual(readyAt)
    } finally {
      await server.stop()
    }
  }, 90_000)
})

describe("start-up", () => {
  it("a database server that accepts the connection and never answers stops the start with a message and exit 1 (it held start-up silently)", async () => {
    const silent = createServer(() => undefined)
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    const port = (silent.address() as { port: number }).port
    try {
      const { code, output } = await startExpectingExit({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x`, DATA_DIR: `${ROOT}.tmp/silent-db` })
      expect(code).toBe(1)
      expect(output).toContain("Connection timed out")
    } finally {
      silent.close()
    }
  }, 60_000)
})
