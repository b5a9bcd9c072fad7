/**
 * Every `curl` example of the README runs against one running service (test mode, with a demo
 * merchant as the quick start makes it), and every request must be answered without an HTTP error
 * (each curl is `curl --fail-with-body`, and its exit status is logged and checked):
 *
 * - verbatim, each block as one bash script with only the addresses of the merchant API and of the
 *   ops listener replaced by the test server's: "Using the API", then "Admin API" (which uses the
 *   demo merchant's deposit wallet that the first requests);
 * - per command, where a block is no script (several terminals, an invite's token and a person's
 *   TOTP codes, a banner): each curl (its `\` continuations joined) runs after the block's variable
 *   assignments, with its placeholders replaced by values the test makes: "The merchant cabinet"
 *   (a real invite, an authenticator app's codes), "Receiving webhooks" (the receiver's port: one of
 *   the test's own) and the start-up banner of "Quick start" (the demo's API key).
 *
 * The last test counts the curl commands in every code block of the README (and in the whole file)
 * and checks that each was run: a new example that no test runs fails it.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { losesCreationAnswer } from "../../src/Providers/Simulator/WalletProviderSim.js"
import { AuthenticatorApp, invite } from "../support/cabinet.js"
import { ROOT, TMP } from "../support/paths.js"
import { pollUntil } from "../support/purchases.js"
import { freePort, type RunningServer, startServer } from "../support/server.js"

const README = readFileSync(join(ROOT, "README.md"), "utf8")

interface Block {
  /** The nearest `##` or `###` heading above the block. */
  readonly heading: string
  /** The fence's language (`sh`, `ts`, or "" for plain text). */
  readonly lang: string
  readonly code: string
}

/** Every fenced code block of the README, with its section. */
const BLOCKS: ReadonlyArray<Block> = (() => {
  const lines = README.split("\n")
  const blocks: Array<Block> = []
  let heading = ""
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\S*)\s*$/.exec(lines[i]!)
    if (fence !== null) {
      let end = i + 1
      while (end < lines.length && lines[end] !== "```") end++
      blocks.push({ heading, lang: fence[1]!, code: lines.slice(i + 1, end).join("\n") })
      i = end
      continue
    }
    const title = /^#{2,3} (.+)$/.exec(lines[i]!)
    if (title !== null) heading = title[1]!
  }
  return blocks
})()

/** The one block of a section holding a curl command. */
const blockOf = (heading: string): Block => {
  const found = BLOCKS.filter((b) => b.heading === heading && curlCount(b.code) > 0)
  expect(found, `one block with curl under "${heading}"`).toHaveLength(1)
  return found[0]!
}

/** A curl command: `curl` followed by an option, anywhere but in a comment line. */
const CURL = /\bcurl\s+-/g
const curlCount = (text: string) => text.split("\n").filter((line) => !line.trim().startsWith("#")).reduce((n, line) => n + (line.match(CURL)?.length ?? 0), 0)

/** Logical lines: `\` continuations joined; comment lines and blank ones left out. */
const commandLines = (code: string) =>
  code.replace(/\\\n\s*/g, " ").split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"))

let server: RunningServer
/** The quick start's demo merchant as the README reads it (data/demo-merchant.json): 1000.00 USD. */
let demo: { merchant_id: string; api_key: string; webhook_secret: string }
/** Curl commands run, and answered without an HTTP error, per block. */
const ran = new Map<Block, number>()

beforeAll(async () => {
  // one server for the file; the receiving-webhooks example points a merchant at a receiver on this machine
  server = await startServer({ env: { WALLET_ISSUANCE_ENABLED: "true", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  // made here on both databases (the service makes its own demo only on the embedded one); not one
  // whose wallet creation answer the simulator loses (one in ten, by its id): the block's wallet
  // request would be a 502
  let merchant = await server.createMerchant()
  while (losesCreationAnswer(merchant.id, "tron")) merchant = await server.createMerchant()
  await credit(merchant.id, 1010.1)
  demo = { merchant_id: merchant.id, api_key: merchant.apiKey, webhook_secret: merchant.webhookSecret }
  await pollUntil(
    "the catalogue synced",
    async () =>
      (await server.merchant(demo.api_key).call((client) => client.catalogue.listItems({ urlParams: { limit: 1 } }))).items.length > 0 ? true : undefined
  )
}, 180_000)
afterAll(async () => {
  await server?.stop()
})

/** POST /admin/deposits through the typed client (the 201 deposit): `amount` USDT sent on tron. */
const credit = (merchantId: string, amount: number) =>
  server.adminApi.call((client) => client.deposits.creditDeposit({ payload: { merchant_id: merchantId, network: "tron", amount } }))

/** A working directory as the quick start leaves it: data/demo-merchant.json and data/admin-token. */
const workingDir = () => {
  const dir = mkdtempSync(`${TMP}readme-`)
  mkdirSync(join(dir, "data"))
  writeFileSync(join(dir, "data", "demo-merchant.json"), JSON.stringify(demo, null, 2) + "\n")
  writeFileSync(join(dir, "data", "admin-token"), server.adminToken)
  return dir
}

const CURL_LOG = "curl.log"
/** Before every script: stop at the first failure; curl fails on an HTTP error, and logs its exit status. */
const PRELUDE = [
  "set -e",
  "curl() {",
  "  local status=0",
  "  command curl --fail-with-body \"$@\" || status=$?",
  `  echo "$status" >> ${CURL_LOG}`,
  "  if [ \"$status\" != 0 ]; then echo \"curl exited with $status: $*\" >&2; fi",
  "  return \"$status\"",
  "}"
]

/** The README's addresses (quick start defaults) as the test server's. */
const localised = (text: string) => text.replaceAll("http://127.0.0.1:8080", server.baseUrl).replaceAll("http://127.0.0.1:9090", server.opsUrl)

/** Runs a script in `dir`; fails the test on its exit status or on any curl's. Its stdout. */
const runScript = (block: Block, dir: string, script: string): string => {
  const logged = () => readFileSync(join(dir, CURL_LOG), "utf8").split("\n").filter((s) => s !== "")
  const before = (() => {
    try {
      return logged().length
    } catch {
      return 0
    }
  })()
  const run = spawnSync("bash", ["-c", [...PRELUDE, localised(script)].join("\n")], { cwd: dir, encoding: "utf8", timeout: 60_000 })
  expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0)
  const statuses = logged().slice(before)
  expect(statuses.every((s) => s === "0"), `curl exit statuses ${statuses.join(" ")}:\n${run.stdout}\n${run.stderr}`).toBe(true)
  ran.set(block, (ran.get(block) ?? 0) + statuses.length)
  return run.stdout
}

/** A line that only sets a variable (`NAME=word`, `NAME="..."`, `NAME=$(...)`), not `NAME=value command`. */
const ASSIGNMENT = /^[A-Z_][A-Z0-9_]*=(\S+|"[^"]*"|'[^']*'|\$\(.*\))$/

/**
 * Each curl of a block that is no script, after the block's variable assignments (`NAME=...`),
 * with `substitute` filling its placeholders; `answered` sees each one's output.
 */
const runEach = async (
  block: Block,
  dir: string,
  substitute: (command: string) => Promise<string> | string,
  answered: (command: string, stdout: string) => void = () => {}
) => {
  const assignments: Array<string> = []
  for (const line of commandLines(block.code)) {
    const at = line.search(CURL)
    if (at >= 0) {
      const command = line.slice(at)
      answered(command, runScript(block, dir, [...assignments, await substitute(command)].join("\n")))
    } else if (ASSIGNMENT.test(line)) {
      assignments.push(line)
    }
  }
}

describe("the README's examples", () => {
  it("Using the API: every command runs, and every request is answered without an HTTP error", () => {
    const block = blockOf("Using the API")
    const stdout = runScript(block, workingDir(), block.code)
    expect(stdout).toContain("\"total_deposited\":1000")
    expect(stdout).toContain("\"custom_id\":\"order-0001\"")
    // the conditional download printed its 304
    expect(stdout).toMatch(/\D304\n/)
  })

  it("Admin API: the block runs as written, every request answered without an HTTP error", async () => {
    const block = blockOf("Admin API")
    // the block pays into the demo merchant's tron wallet, which "Using the API" requests (a repeat returns it)
    await server.merchant(demo.api_key).call((client) => client.deposits.requestWallet({ payload: { network: "tron" } }))
    const stdout = runScript(block, workingDir(), block.code)
    expect(stdout).toContain("\"name\":\"acme\"")
    expect(stdout).toContain("\"trc20\":\"TJRabPrwbZy45sbavfcjinPJC18kjpRTv8\"")
    expect(stdout).toMatch(/"upserted":1,"ids":\["[0-9a-f-]{36}"\]/)
    expect(stdout).toContain("\"delivery_status\":\"pending\"")
    expect(stdout).toContain("\"requeued\":")
    expect(stdout).toContain("\"status\":\"blocked\"")
  }, 120_000)

  it("The merchant cabinet: each request, with a real invite and an authenticator app's codes", async () => {
    const block = blockOf("The merchant cabinet")
    const merchant = await server.createMerchant()
    const token = await invite(server, merchant.id)
    let app: AuthenticatorApp | undefined
    const answers: Array<string> = []
    await runEach(
      block,
      workingDir(),
      async (command) => {
        let filled = command.replaceAll("<token>", token)
        // the six digits a person reads off the authenticator app: a fresh code each time
        if (/"code":"\d{6}"/.test(filled)) filled = filled.replace(/"code":"\d{6}"/, `"code":"${await app!.code()}"`)
        return filled
      },
      (command, stdout) => {
        answers.push(stdout)
        if (command.includes("/invite/start")) app = new AuthenticatorApp(JSON.parse(stdout).totp_secret)
      }
    )
    const me = answers.find((answer) => answer.includes("\"api_key_last4\""))
    expect(me).toContain(`"merchant_id":"${merchant.id}"`)
    expect(me).toContain("\"login\":\"ops@acme.example\"")
    expect(answers.join("\n")).toContain("\"wallets\":[]")
  }, 120_000)

  it("Receiving webhooks: the merchant is pointed at a receiver on this machine, which gets the next deposit", async () => {
    const block = blockOf("Receiving webhooks")
    const deliveries: Array<{ event: string | undefined; body: any }> = []
    const port = await freePort()
    const receiver: Server = createServer((request, response) => {
      let body = ""
      request.on("data", (chunk) => body += chunk)
      request.on("end", () => {
        deliveries.push({ event: request.headers["x-event"] as string | undefined, body: JSON.parse(body) })
        response.writeHead(200).end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(port, "127.0.0.1", resolve))
    try {
      await runEach(block, workingDir(), (command) => command.replaceAll("127.0.0.1:4000", `127.0.0.1:${port}`))
      // what `npm run cli -- deposit simulate $MID 102.50` does
      const deposit = await credit(demo.merchant_id, 102.5)
      await pollUntil(
        "the deposit's webhook",
        async () => deliveries.find((d) => d.event === "balance.deposited" && d.body.data?.deposit_id === deposit.id) ?? undefined,
        30_000
      )
    } finally {
      await new Promise((resolve) => receiver.close(resolve))
    }
  })

  it("Quick start: the start-up banner's curl", async () => {
    const banner = BLOCKS.find((b) => b.heading === "Quick start" && b.code.includes("Try: curl"))!
    const answers: Array<string> = []
    await runEach(banner, workingDir(), (command) => command.replaceAll("mer_live_…", demo.api_key), (_command, stdout) => answers.push(stdout))
    expect(answers.join("")).toMatch(/^\{"available":[\d.]+,.*"currency":"USD"/)
  })

  it("every curl command of the README was run, each answered without an HTTP error", () => {
    const withCurl = BLOCKS.filter((b) => curlCount(b.code) > 0)
    // none outside the code blocks either, and every code line naming curl is counted
    expect(withCurl.reduce((n, b) => n + curlCount(b.code), 0)).toBe(curlCount(README))
    const namingCurl = BLOCKS.flatMap((b) => b.code.split("\n")).filter((line) => /\bcurl\b/.test(line) && !line.trim().startsWith("#"))
    expect(namingCurl.length).toBeGreaterThan(0)
    expect(curlCount(README)).toBe(namingCurl.length)
    expect(withCurl.map((b) => [b.heading, ran.get(b) ?? 0])).toEqual(withCurl.map((b) => [b.heading, curlCount(b.code)]))
  })
})
