/**
 * The operator CLI (CONTRACT 2) against the real service: each command runs as a child process
 * (`node dist/bundle/cli.mjs ...`, built by globalSetup when stale, as `npm run cli` runs it) and
 * talks to the ops listener over HTTP. Its help and typing mistakes: cli-usage.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { cliJson as json, type CliResult, runCli } from "../support/cli.js"
import { expectError } from "../support/expectations.js"
import { TMP } from "../support/paths.js"
import { type RunningServer, startServer } from "../support/server.js"
import { failedEvent } from "../support/webhook-events.js"

describe("operator CLI", () => {
  let server: RunningServer
  /** `args` with the connection options of this server. */
  let cli: (...args: Array<string>) => Promise<CliResult>
  beforeAll(async () => {
    server = await startServer({ env: { WALLET_ISSUANCE_ENABLED: "true", WEBHOOK_RETRY_SCHEDULE: "0" } })
    cli = (...args) => runCli([...args, "--ops-url", server.opsUrl, "--admin-token", server.adminToken])
  })
  afterAll(async () => {
    await server?.stop()
  })
  // A server that died mid-file explains every later failure: show why.
  afterEach(() => {
    if (server !== undefined && server.process.exitCode !== null) {
      console.error(`server exited with ${server.process.exitCode}:\n${server.output().slice(-4000)}`)
    }
  })

  /** GET /balance through the typed client: the decoded Balance (a non-200 answer rejects). */
  const balanceOf = (apiKey: string) => server.merchant(apiKey).call((client) => client.balance.getBalance())

  const createMerchant = async (webhookUrl?: string) => {
    const name = `cli-${Math.random().toString(36).slice(2, 10)}`
    const created = json(await cli("merchant", "create", name, "--json", ...(webhookUrl ? ["--webhook-url", webhookUrl] : [])))
    return { name, ...created } as { name: string; merchant_id: string; api_key: string; webhook_secret: string }
  }

  it("merchant create --json prints the new merchant with its key and secret", async () => {
    const name = `cli-${Math.random().toString(36).slice(2, 10)}`
    const created = json(await cli("merchant", "create", name, "--webhook-url", "https://example.com/hooks", "--json"))
    expect(created).toMatchObject({ name, status: "active", webhook_url: "https://example.com/hooks" })
    expect(created.merchant_id).toMatch(/^[0-9a-f-]{36}$/)
    expect(created.api_key).toMatch(/^mer_live_/)
    expect(typeof created.webhook_secret).toBe("string")
    await balanceOf(created.api_key)
  })

  it("merchant create without --json prints a summary with the key", async () => {
    const name = `cli-${Math.random().toString(36).slice(2, 10)}`
    const result = await cli("merchant", "create", name)
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(`created merchant ${name}`)
    expect(result.stdout).toMatch(/api_key:\s+mer_live_/)
    expect(result.stdout).toContain("shown only now")
  })

  it("merchant show prints the merchant without key or secret", async () => {
    const m = await createMerchant()
    const shown = json(await cli("merchant", "show", m.merchant_id, "--json"))
    expect(shown).toMatchObject({ merchant_id: m.merchant_id, name: m.name, status: "active", webhook_url: null })
    expect(shown).not.toHaveProperty("api_key")
    expect(shown).not.toHaveProperty("webhook_secret")

    const human = await cli("merchant", "show", m.merchant_id)
    expect(human.code).toBe(0)
    expect(human.stdout).toContain(`merchant ${m.name}`)
    expect(human.stdout).toMatch(/status:\s+active/)
    expect(human.stdout).not.toContain("mer_live_")
  })

  it("merchant block, unblock and deactivate change the status the merchant API enforces", async () => {
    const m = await createMerchant()

    expect(json(await cli("merchant", "block", m.merchant_id, "--json")).status).toBe("blocked")
    expectError(await server.api("/balance", { key: m.api_key }), 403, "MERCHANT_BLOCKED")

    const unblocked = await cli("merchant", "unblock", m.merchant_id)
    expect(unblocked.code).toBe(0)
    expect(unblocked.stdout).toContain("is now active")
    await balanceOf(m.api_key)

    expect(json(await cli("merchant", "deactivate", m.merchant_id, "--json")).status).toBe("inactive")
    // Reads still work for an inactive merchant.
    await balanceOf(m.api_key)
    expect((await server.adminApi.call((client) => client.merchants.getMerchant({ path: { id: m.merchant_id } }))).status).toBe("inactive")
  })

  it("merchant rotate-key: the old key stops working, the new one works", async () => {
    const m = await createMerchant()
    const rotated = json(await cli("merchant", "rotate-key", m.merchant_id, "--json"))
    expect(rotated.api_key).toMatch(/^mer_live_/)
    expect(rotated.api_key).not.toBe(m.api_key)
    expect((await server.api("/balance", { key: m.api_key })).status).toBe(401)
    await balanceOf(rotated.api_key)

    const human = await cli("merchant", "rotate-key", m.merchant_id)
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/mer_live_/)
    expect(human.stdout).toContain("previous key has stopped working")
  })

  it("merchant rotate-webhook-secret issues a new secret", async () => {
    const m = await createMerchant()
    const rotated = json(await cli("merchant", "rotate-webhook-secret", m.merchant_id, "--json"))
    expect(typeof rotated.webhook_secret).toBe("string")
    expect(rotated.webhook_secret).not.toBe(m.webhook_secret)
  })

  it("deposit simulate credits through the real path (tier commission)", async () => {
    const m = await createMerchant()
    const deposit = json(await cli("deposit", "simulate", m.merchant_id, "102.50", "--network", "bsc", "--tx-id", `tx-${m.name}`, "--json"))
    expect(deposit).toMatchObject({ amount: 101.47, currency: "USD", network: "bsc", tx_id: `tx-${m.name}`, status: "paid" })
    expect((await balanceOf(m.api_key)).available).toBe(101.47)

    // The same tx_id twice credits once, and the second run says so
    const again = await cli("deposit", "simulate", m.merchant_id, "102.50", "--network", "bsc", "--tx-id", `tx-${m.name}`)
    expect(again.code).toBe(0)
    expect(again.stdout.split("\n")[0]).toBe(`already credited: deposit ${deposit.id} (101.47 USD to merchant ${m.merchant_id}); nothing credited now`)
    expect((await balanceOf(m.api_key)).available).toBe(101.47)
    // a new tx_id is a new credit, worded as one
    const other = await cli("deposit", "simulate", m.merchant_id, "10", "--tx-id", `tx2-${m.name}`)
    expect(other.stdout.split("\n")[0]).toBe(`credited 9.90 USD to merchant ${m.merchant_id}`)
  })

  it("deposit simulate rejects a malformed amount before calling the service", async () => {
    const m = await createMerchant()
    const result = await cli("deposit", "simulate", m.merchant_id, "12.5x")
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("AMOUNT")
  })

  it("an unknown merchant: exit code 1 and the error code on stderr", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000"
    const shown = await cli("merchant", "show", unknown)
    expect(shown.code).toBe(1)
    expect(shown.stderr).toContain("ADMIN_NOT_FOUND")
    expect(shown.stdout).toBe("")

    const blocked = await cli("merchant", "block", unknown, "--json")
    expect(blocked.code).toBe(1)
    expect(blocked.stderr).toContain("ADMIN_NOT_FOUND")

    const deposit = await cli("deposit", "simulate", unknown, "10")
    expect(deposit.code).toBe(1)
    expect(deposit.stderr).toContain("ADMIN_NOT_FOUND")
  })

  it("a wrong admin token: exit code 1", async () => {
    const result = await runCli(["merchant", "create", "nobody", "--ops-url", server.opsUrl, "--admin-token", "wrong-token"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("ADMIN_UNAUTHORIZED")
  })

  it("reads OPS_URL and ADMIN_TOKEN from the environment, and options before the command", async () => {
    const m = await createMerchant()
    const fromEnv = await runCli(["merchant", "show", m.merchant_id, "--json"], { OPS_URL: server.opsUrl, ADMIN_TOKEN: server.adminToken })
    expect(json(fromEnv).merchant_id).toBe(m.merchant_id)

    const global = await runCli(["--ops-url", server.opsUrl, "--admin-token", server.adminToken, "--json", "merchant", "show", m.merchant_id])
    expect(json(global).merchant_id).toBe(m.merchant_id)
  })

  it("falls back to the token in DATA_DIR/admin-token", async () => {
    const dataDir = mkdtempSync(`${TMP}cli-`)
    try {
      writeFileSync(`${dataDir}/admin-token`, `${server.adminToken}\n`)
      const m = await createMerchant()
      const result = await runCli(["merchant", "show", m.merchant_id, "--json"], { OPS_URL: server.opsUrl, DATA_DIR: dataDir })
      expect(json(result).name).toBe(m.name)

      const missing = await runCli(["merchant", "show", m.merchant_id], { OPS_URL: server.opsUrl, DATA_DIR: `${dataDir}/nope` })
      expect(missing.code).toBe(1)
      expect(missing.stderr).toContain("no admin token")
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it("catalogue load refuses a file that is not a JSON array", async () => {
    const dataDir = mkdtempSync(`${TMP}cli-`)
    try {
      writeFileSync(`${dataDir}/items.json`, JSON.stringify({ not: "items" }))
      const result = await cli("catalogue", "load", `${dataDir}/items.json`)
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("must hold a JSON array")
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it("merchant list finds merchants by part of the name, page by page; merchant show takes a name too", async () => {
    const tag = `Lst${Date.now()}`
    for (const suffix of ["a", "b", "c"]) expect((await cli("merchant", "create", `${tag}-${suffix}`)).code).toBe(0)
    await cli("merchant", "create", `other-100%_${tag}`)
    const first = json(await cli("merchant", "list", "--name", tag.toLowerCase(), "--limit", "2", "--json"))
    expect(first.merchants.map((m: any) => m.name)).toEqual([`${tag}-a`, `${tag}-b`])
    expect(first.next_after).toBe(`${tag}-b`)
    const second = json(await cli("merchant", "list", "--name", tag.toLowerCase(), "--limit", "2", "--after", first.next_after, "--json"))
    expect(second.merchants.map((m: any) => m.name)).toEqual([`${tag}-c`, `other-100%_${tag}`])
    expect(second.next_after).toBeNull()
    // LIKE's wildcards are matched as themselves
    const literal = json(await cli("merchant", "list", "--name", "100%_", "--json"))
    expect(literal.merchants.map((m: any) => m.name)).toContain(`other-100%_${tag}`)
    expect(literal.merchants.every((m: any) => m.name.includes("100%_"))).toBe(true)
    const table = await cli("merchant", "list", "--name", tag)
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+STATUS\s+ID$/)
    expect(table.stdout).toContain(`${tag}-c`)

    const shown = json(await cli("merchant", "show", `${tag}-b`, "--json"))
    expect(shown).toMatchObject({ name: `${tag}-b`, status: "active" })
    const missing = await cli("merchant", "show", `${tag}-zzz`)
    expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining("ADMIN_NOT_FOUND")])
    const badLimit = await cli("merchant", "list", "--limit", "500")
    expect([badLimit.code, badLimit.stderr]).toEqual([1, expect.stringContaining("ADMIN_INVALID_REQUEST")])
  })

  it("merchant invite prints a single-use cabinet link; a second invite voids the first", async () => {
    const m = json(await cli("merchant", "create", `cli-invite-${Date.now()}`, "--json"))
    const first = json(await cli("merchant", "invite", m.merchant_id, "--json"))
    expect(first.invite_url).toMatch(new RegExp(`^${server.baseUrl}/cabinet/invite#[A-Za-z0-9_-]{43}$`))
    const second = await cli("merchant", "invite", m.merchant_id)
    expect(second.code).toBe(0)
    expect(second.stdout).toContain("/cabinet/invite#")
    expect(second.stdout).toContain("earlier unused invite of this merchant no longer works")
    const start = (url: string) =>
      fetch(`${server.baseUrl}/cabinet/api/invite/start`, {
        method: "POST",
        headers: { origin: server.baseUrl, "content-type": "application/json" },
        body: JSON.stringify({ token: url.split("#")[1] })
      }).then((r) => r.status)
    expect(await start(first.invite_url)).toBe(400)
    expect(await start(second.stdout.match(/\S+\/cabinet\/invite#\S+/)![0])).toBe(200)
    const unknown = await cli("merchant", "invite", "00000000-0000-4000-8000-000000000000")
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining("ADMIN_NOT_FOUND")])
  })

  it("merchant rotate-webhook-secret --keep-previous keeps the old secret signing for that long", async () => {
    const m = json(await cli("merchant", "create", `cli-rot-${Date.now()}`, "--json"))
    const result = await cli("merchant", "rotate-webhook-secret", m.merchant_id, "--keep-previous", "3600")
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/whsec_/)
    expect(result.stdout).toContain("for 3600 s")
    const refused = await cli("merchant", "rotate-webhook-secret", m.merchant_id, "--keep-previous", "604801")
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining("ADMIN_INVALID_REQUEST")])
  })

  it("webhook replay and webhook recover send failed events again with their ids", async () => {
    // no webhook URL: the one attempt of the schedule fails before any byte, and the event is failed
    const m = json(await cli("merchant", "create", `cli-hook-${Date.now()}`, "--json"))
    await server.deposit(m.merchant_id, 10)
    const failed = await failedEvent(server, m.api_key)
    const replay = await cli("webhook", "replay", failed.id)
    expect([replay.code, replay.stdout]).toEqual([0, expect.stringContaining(`replay of webhook event ${failed.id} queued`)])
    await failedEvent(server, m.api_key, 2)
    const recover = await cli("webhook", "recover", m.merchant_id, "--since", "2020-01-01T00:00:00Z", "--json")
    expect(json(recover)).toEqual({ requeued: 1 })
    const bad = await cli("webhook", "recover", m.merchant_id, "--since", "yesterday")
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining("ADMIN_INVALID_REQUEST")])
  })

  it("wallet list shows a merchant's wallets; wallet pay credits through the simulated provider's callback", async () => {
    const m = json(await cli("merchant", "create", `cli-wallet-${Date.now()}`, "--json"))
    expect((await cli("wallet", "list", m.merchant_id)).stdout).toContain("has no deposit wallets")
    // one merchant and network in ten loses the provider's answer (CONTRACT 5.4, a 502): a reconcile binds it
    const wallets = server.merchant(m.api_key)
    await wallets.attempt((client) => client.deposits.requestWallet({ payload: { network: "bsc" } }))
    const [saved] = (await wallets.call((client) => client.deposits.listWallets())).wallets
    expect(saved).toBeDefined()
    const wallet = saved!.status === "bound" ? saved! : await wallets.call((client) => client.deposits.reconcileWallet({ path: { walletId: saved!.id } }))
    expect(wallet.status).toBe("bound")
    const listed = await cli("wallet", "list", m.merchant_id)
    expect(listed.stdout).toContain(wallet.address)
    expect(listed.stdout).toContain("can deposit")
    expect(json(await cli("wallet", "list", m.merchant_id, "--json")).wallets[0]).toMatchObject({ id: wallet.id, address: wallet.address })
    const paid = await cli("wallet", "pay", wallet.id, "102.50", "--tx-id", `cli-pay-${Date.now()}`)
    expect([paid.code, paid.stdout]).toEqual([0, expect.stringContaining("payment of 102.5 USDT")])
    for (let i = 0; i < 200; i++) {
      const { deposits } = await server.merchant(m.api_key).call((client) => client.deposits.listDeposits({ urlParams: {} }))
      if (deposits.length === 1) {
        expect(deposits[0]).toMatchObject({ amount: 101.47, provider: "walletpay", destination: wallet.address })
        return
      }
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error("the payment was not credited")
  })

  it("wallet pay refuses a malformed amount before calling the service", async () => {
    const result = await cli("wallet", "pay", "00000000-0000-4000-8000-000000000000", "1e3")
    expect(result.code).not.toBe(0)
    expect(result.stderr + result.stdout).toContain("AMOUNT must be a positive number")
  })
})
