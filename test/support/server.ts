/**
 * Starts the real service in a child process on free ports (`node --import tsx src/main.ts`),
 * exactly as `npm start` runs it, and talks to it over real sockets.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import type { DepositItem } from "../../src/Deposits/Api.js"
import { type AdminClient, adminClient, type MerchantClient, merchantClient, reportServerOnTransportError, type Typed } from "./client.js"
import { type FreshDatabase, freshDatabase } from "./database.js"
import { ROOT, SERVICE_ARGS } from "./paths.js"

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/**
 * `n` distinct free ports: each is held until all are found (ports taken one after the other can
 * be the same one, released by the first probe and handed out again to the second).
 */
export const freePorts = async (n: number): Promise<Array<number>> => {
  const servers = await Promise.all(Array.from({ length: n }, () =>
    new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
      const server = createServer()
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => resolve(server))
    })))
  const ports = servers.map((server) => {
    const address = server.address()
    return typeof address === "object" && address !== null ? address.port : 0
  })
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  return ports
}

export interface StartOptions {
  /** Extra environment (settings of CONTRACT section 1). */
  readonly env?: Record<string, string>
  /** Reuse a database (several servers on one PostgreSQL); a fresh one otherwise. */
  readonly database?: FreshDatabase
  /** What to wait for before the server is handed over: `/ready` (the default) or only `/health` (start-up still running). */
  readonly waitFor?: "ready" | "health"
  /**
   * ERROR log lines (and supervised fibers' restarts) the test provokes on purpose, by a pattern of
   * the line. Any other such line fails the test that stops the server (see `stop`).
   */
  readonly expectedErrors?: ReadonlyArray<RegExp>
  /** The ports to listen on (a node started again in place behind a balancer); free ones otherwise. */
  readonly ports?: { readonly api: number; readonly ops: number }
}

export interface JsonResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: unknown
}

export interface RunningServer {
  readonly baseUrl: string
  readonly opsUrl: string
  readonly adminToken: string
  readonly database: FreshDatabase
  readonly output: () => string
  /** A request to the merchant API (path relative to /api/v1/merchant). */
  readonly api: (path: string, init?: { method?: string; key?: string | null; body?: unknown; headers?: Record<string, string> }) => Promise<JsonResponse>
  /** The merchant API's typed client (HttpApiClient) for an API key: the way to read and buy when the input is valid. */
  readonly merchant: (apiKey: string) => Typed<MerchantClient>
  /** The admin API's typed client with the admin token. */
  readonly adminApi: Typed<AdminClient>
  /** A request to the ops listener with the admin token. */
  readonly admin: (path: string, init?: { method?: string; body?: unknown; token?: string | null }) => Promise<JsonResponse>
  readonly createMerchant: (name?: string, webhookUrl?: string | null) => Promise<{ id: string; apiKey: string; webhookSecret: string }>
  /** Credits `amount` USDT sent on tron (through the real crediting path, the typed admin client): the 201 DepositItem. */
  readonly deposit: (merchantId: string, amount: number, txId?: string) => Promise<typeof DepositItem.Type>
  /**
   * Stops the server (SIGTERM by default) and waits for its exit: its exit code. Then fails (throws)
   * when the server logged a line at ERROR or FATAL, or restarted a supervised fiber, that no
   * pattern of `expectedErrors` (or `expectErrors`) allows: a test passes only when the service
   * stayed healthy, unless it provoked the fault on purpose.
   */
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
  /** Allows further ERROR lines, for a fault a test provokes after the start. */
  readonly expectErrors: (...patterns: ReadonlyArray<RegExp>) => void
  /** The ERROR lines (and fiber restarts) logged so far that no expected pattern allows. */
  readonly unexpectedErrors: () => ReadonlyArray<string>
  readonly process: ChildProcess
}

/** A log line of the service at ERROR or FATAL (JSON logs), a restart of a supervised fiber, or an uncaught crash. */
const isErrorLine = (line: string) =>
  /"logLevel":"(ERROR|FATAL)"/.test(line) || /supervised fiber (stopped|lost its database connection)/.test(line) ||
  /Unhandled 'error' event|^\s*throw er;/.test(line)

/** The lines of `output` that are errors and match none of `allowed`. */
export const unexpectedErrorLines = (output: string, allowed: ReadonlyArray<RegExp>): ReadonlyArray<string> =>
  output.split("\n").filter((line) => isErrorLine(line) && !allowed.some((pattern) => pattern.test(line)))

const ADMIN_TOKEN = "adm_test_token_0123456789abcdefghijkl"
let merchantCounter = 0

/** A request as sent (a string body goes as it is, anything else as JSON): the status, headers, text and the JSON when the text is JSON. */
export const request = async (url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> }): Promise<JsonResponse> => {
  const headers: Record<string, string> = { ...init.headers }
  let body: string | undefined
  if (init.body !== undefined) {
    body = typeof init.body === "string" ? init.body : JSON.stringify(init.body)
    headers["content-type"] ??= "application/json"
  }
  const response = await fetch(url, { method: init.method ?? "GET", headers, ...(body !== undefined ? { body } : {}) })
  const text = await response.text()
  let json: unknown = undefined
  try {
    json = text === "" ? undefined : JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, text, json }
}

/** The server could not listen: its port was taken between `freePort` and its own listen. */
class PortTaken extends Error {}

export const startServer = async (options: StartOptions = {}): Promise<RunningServer> => {
  const database = options.database ?? await freshDatabase()
  if (options.ports !== undefined) return startOn(database, options, options.ports.api, options.ports.ops)
  // Another process (a test file running beside this one, an outgoing connection's local port)
  // can take a port between freePort and the server's listen: then new ports are tried.
  for (let attempt = 1;; attempt++) {
    try {
      const [port, opsPort] = await freePorts(2)
      return await startOn(database, options, port!, opsPort!)
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === 3) throw error
    }
  }
}

const startOn = async (database: FreshDatabase, options: StartOptions, port: number, opsPort: number): Promise<RunningServer> => {
  const env: Record<string, string> = {
    ...process.env as Record<string, string>,
    PORT: String(port),
    OPS_PORT: String(opsPort),
    HOST: "127.0.0.1",
    OPS_HOST: "127.0.0.1",
    DATA_DIR: database.dataDir,
    ADMIN_TOKEN,
    DEMO_MERCHANT: "false",
    LOG_LEVEL: "warning",
    SIM_TIME_SCALE: "0.02",
    ...options.env
  }
  delete env["DATABASE_URL"]
  if (database.url !== undefined) env["DATABASE_URL"] = database.url
  const child = spawn(process.execPath, [...SERVICE_ARGS], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.on("data", (chunk) => {
    output += chunk
  })
  child.stderr!.on("data", (chunk) => {
    output += chunk
  })
  let stopping = false
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  // A server that dies on its own is a bug: show what it said (tests that kill it set `stopping`).
  child.once("exit", (code, signal) => {
    if (!stopping && signal !== "SIGKILL" && !output.includes("EADDRINUSE")) {
      process.stderr.write(`\nserver on port ${port} exited on its own (${code ?? signal}):\n${output.slice(-8_000)}\n`)
    }
  })

  const baseUrl = `http://127.0.0.1:${port}`
  const opsUrl = `http://127.0.0.1:${opsPort}`
  // a request that fails below HTTP says whether this server was still running, and what it logged last
  const report = () =>
    `the server on ports ${port} and ${opsPort} ${child.exitCode === null ? "is running" : `exited (${child.exitCode})`}${
      stopping ? ", told to stop" : ""
    }; it said last:\n${output.slice(-3_000) || "(nothing)"}`
  reportServerOnTransportError(baseUrl, report)
  reportServerOnTransportError(opsUrl, report)
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) {
      if (output.includes("EADDRINUSE")) throw new PortTaken(output)
      throw new Error(`server exited with ${child.exitCode}:\n${output}`)
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`server did not become ready:\n${output}`)
    }
    const ready = await fetch(`${opsUrl}/${options.waitFor ?? "ready"}`).then((r) => r.status === 200, () => false)
    if (ready) break
    await new Promise((r) => setTimeout(r, 100))
  }

  const api: RunningServer["api"] = (path, init = {}) =>
    request(`${baseUrl}/api/v1/merchant${path}`, {
      ...init,
      headers: { ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...init.headers }
    })
  const admin: RunningServer["admin"] = (path, init = {}) =>
    request(`${opsUrl}${path}`, {
      ...init,
      headers: init.token === null ? {} : { authorization: `Bearer ${init.token ?? ADMIN_TOKEN}` }
    })
  const adminApi = adminClient(opsUrl, ADMIN_TOKEN)
  const merchant: RunningServer["merchant"] = (apiKey) => merchantClient(baseUrl, apiKey)
  const createMerchant: RunningServer["createMerchant"] = async (name, webhookUrl = null) => {
    const created = await adminApi.call((client) =>
      client.merchants.createMerchant({
        payload: { name: name ?? `merchant-${process.pid}-${merchantCounter++}-${Math.random().toString(36).slice(2, 8)}`, webhook_url: webhookUrl }
      })
    )
    return { id: created.merchant_id, apiKey: created.api_key, webhookSecret: created.webhook_secret }
  }
  const deposit: RunningServer["deposit"] = (merchantId, amount, txId) =>
    adminApi.call((client) =>
      client.deposits.creditDeposit({ payload: { merchant_id: merchantId, network: "tron", amount, ...(txId ? { tx_id: txId } : {}) } })
    )

  const expected: Array<RegExp> = [...options.expectedErrors ?? []]
  const unexpectedErrors = () => unexpectedErrorLines(output, expected)
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    stopping = true
    if (child.exitCode === null) child.kill(signal)
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
    const code = await exited
    clearTimeout(timer)
    if (options.database === undefined) await database.drop()
    const unexpected = unexpectedErrors()
    if (unexpected.length > 0) {
      throw new Error(
        `the server on port ${port} logged ${unexpected.length} error line(s) no test expected:\n${
          unexpected.slice(0, 10).map((l) => l.slice(0, 1_500)).join("\n")
        }`
      )
    }
    return code
  }

  return {
    baseUrl,
    opsUrl,
    adminToken: ADMIN_TOKEN,
    database,
    output: () => output,
    api,
    merchant,
    adminApi,
    admin,
    createMerchant,
    deposit,
    stop,
    expectErrors: (...patterns) => {
      expected.push(...patterns)
    },
    unexpectedErrors,
    process: child
  }
}

/** PATCH /admin/merchants/{id} of a status through the typed admin client: the merchant as it now is (a 200 AdminMerchant). */
export const setMerchantStatus = (server: RunningServer, id: string, status: "active" | "blocked" | "inactive") =>
  server.adminApi.call((client) => client.merchants.updateMerchant({ path: { id }, payload: { status } }))

/** The value of a metric's line (its name with any labels, e.g. `name{route="/x"}`) in /metrics; 0 when absent. */
export const metricValue = async (server: RunningServer, series: string) => {
  const text = await fetch(`${server.opsUrl}/metrics`).then((r) => r.text())
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
}

/** Responses the fast lane answered so far for a merchant API route (e.g. `/buy`), from /metrics. */
export const fastLaneAnswers = (server: RunningServer, route: string) => metricValue(server, `http_fast_lane_responses_total{route="/api/v1/merchant${route}"}`)
