/**
 * The receivers a merchant's engineer starts with, against the real sender: the README's example
 * receiver (examples/webhook-receiver.ts, which the README shows verbatim) and the CLI's
 * `webhook listen`. Both accept signed deliveries, refuse forged or stale ones, and the example
 * dedupes a replayed event.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sign } from "../../src/Webhooks/Signature.js"
import { ROOT } from "../support/paths.js"
import { pollUntil, PURCHASE_ENV } from "../support/purchases.js"
import { freePort, type RunningServer, startServer } from "../support/server.js"

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: { ...PURCHASE_ENV, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
})
afterAll(async () => {
  await server?.stop()
})

interface Running {
  readonly child: ChildProcess
  readonly output: () => string
  readonly url: string
}

/** Starts a receiver process and waits until it says it listens. */
const run = async (args: ReadonlyArray<string>, env: Record<string, string>, port: number): Promise<Running> => {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.on("data", (chunk) => {
    output += chunk
  })
  child.stderr!.on("data", (chunk) => {
    output += chunk
  })
  await pollUntil("the receiver listening", async () => {
    if (child.exitCode !== null) throw new Error(`receiver exited: ${output}`)
    return /listening/.test(output) ? true : undefined
  }, 30_000)
  return { child, output: () => output, url: `http://127.0.0.1:${port}/webhooks` }
}

/** The merchant's webhook events, newest first (GET /webhook-events through the typed client). */
const eventsOf = async (apiKey: string) => (await server.merchant(apiKey).call((client) => client.webhooks.listWebhookEvents({ urlParams: {} }))).events

/** A deposit credited through POST /admin/deposits (201). */
const credit = (merchantId: string, amount: number, txId: string) =>
  server.adminApi.call((client) => client.deposits.creditDeposit({ payload: { merchant_id: merchantId, network: "tron", amount, tx_id: txId } }))

const forged = async (url: string, secret: string, timestamp: number) => {
  const body = JSON.stringify({ event_id: randomUUID(), event_type: "balance.deposited", created_at: new Date().toISOString(), data: {} })
  const ts = String(timestamp)
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-timestamp": ts, "x-signature": sign(secret, ts, body) },
    body
  })
  return res.status
}

describe("the README's example receiver", () => {
  let receiver: Running
  afterAll(() => {
    receiver?.child.kill()
  })

  it("is shown verbatim in the README", () => {
    const readme = readFileSync(`${ROOT}README.md`, "utf8")
    const example = readFileSync(`${ROOT}examples/webhook-receiver.ts`, "utf8")
    expect(readme).toContain("```ts\n" + example + "```")
  })

  it("accepts the service's deliveries, dedupes a replay, and refuses forged or stale ones", async () => {
    const port = await freePort()
    const m = await server.createMerchant()
    receiver = await run(["--import", "tsx", "examples/webhook-receiver.ts"], { PORT: String(port), WEBHOOK_SECRET: m.webhookSecret }, port)
    await server.adminApi.call((client) => client.merchants.updateMerchant({ path: { id: m.id }, payload: { webhook_url: receiver.url } }))
    await credit(m.id, 102.5, `tx-${randomUUID()}`)
    const line = await pollUntil(
      "the event processed",
      async () => receiver.output().match(/processed (\S+) balance\.deposited amount=101\.47 balance_after=101\.47/) ?? undefined
    )
    const eventId = line[1]!
    const events = await eventsOf(m.apiKey)
    await pollUntil("delivered", async () => (await eventsOf(m.apiKey))[0]!.delivery_status === "delivered" ? true : undefined)
    expect(events[0]!.id).toBe(eventId)

    await server.adminApi.call((client) => client.webhooks.replayEvent({ path: { id: eventId } }))
    await pollUntil("the replay seen as a duplicate", async () => receiver.output().includes(`duplicate ${eventId}`) ? true : undefined)

    expect(await forged(receiver.url, "whsec_not_the_secret", Math.floor(Date.now() / 1000))).toBe(400)
    expect(await forged(receiver.url, m.webhookSecret, Math.floor(Date.now() / 1000) - 301)).toBe(400)
    expect(await forged(receiver.url, m.webhookSecret, Math.floor(Date.now() / 1000))).toBe(200)
  })
})

describe("npm run cli -- webhook listen", () => {
  let receiver: Running
  afterAll(() => {
    receiver?.child.kill()
  })

  it("prints one line per delivery with its verdict, answers 200 to valid ones and 400 to forged ones; --json prints bodies", async () => {
    const port = await freePort()
    const m = await server.createMerchant()
    receiver = await run(["dist/bundle/cli.mjs", "webhook", "listen", "--port", String(port), "--secret", m.webhookSecret, "--json"], {}, port)
    await server.adminApi.call((client) => client.merchants.updateMerchant({ path: { id: m.id }, payload: { webhook_url: receiver.url } }))
    const txId = `tx-${randomUUID()}`
    await credit(m.id, 10, txId)
    // the line, then the body (--json)
    await pollUntil("the delivery printed", async () => /balance\.deposited order=- valid\n.*"tx_id":"tx-/.test(receiver.output()) ? true : undefined)
    expect(receiver.output()).toContain(txId)
    await pollUntil("delivered", async () => (await eventsOf(m.apiKey))[0]!.delivery_status === "delivered" ? true : undefined)
    // (the answer may come before the line reaches this process through the pipe)
    const printed = (pattern: RegExp) => pollUntil(`a line matching ${pattern}`, async () => pattern.test(receiver.output()) ? true : undefined)
    expect(await forged(receiver.url, "whsec_wrong", Math.floor(Date.now() / 1000))).toBe(400)
    await printed(/balance\.deposited order=- bad-signature/)
    expect(await forged(receiver.url, m.webhookSecret, 1_000)).toBe(400)
    await printed(/stale-timestamp/)
  })
})
