/**
 * The README's "Using the API" block runs as written against a running service (test mode, the
 * demo merchant), every curl failing the test on an HTTP error; only the service's address is
 * replaced by the test server's.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { losesCreationAnswer } from "../../src/Providers/Simulator/WalletProviderSim.js"
import { ROOT, TMP } from "../support/paths.js"
import { pollUntil } from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

/** The shell blocks of a README section. */
const shellBlocks = (section: string) => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const start = readme.indexOf(`\n## ${section}\n`)
  const end = readme.indexOf("\n## ", start + 1)
  return [...readme.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)
}

let server: RunningServer
/** The quick start's demo merchant as the README reads it (data/demo-merchant.json): 1000.00 USD. */
let demo: { merchant_id: string; api_key: string }
beforeAll(async () => {
  server = await startServer({ env: { WALLET_ISSUANCE_ENABLED: "true" } })
  // made here on both databases (the service makes its own demo only on the embedded one); not one
  // whose wallet creation answer the simulator loses (one in ten, by its id): the block's wallet
  // request would be a 502
  let merchant = await server.createMerchant()
  while (losesCreationAnswer(merchant.id, "tron")) merchant = await server.createMerchant()
  expect((await server.deposit(merchant.id, 1010.1)).status).toBe(201)
  demo = { merchant_id: merchant.id, api_key: merchant.apiKey }
  await pollUntil("the catalogue synced", async () => ((await server.api("/items?limit=1", { key: demo.api_key })).json?.items?.length > 0 ? true : undefined))
}, 180_000)
afterAll(async () => {
  await server?.stop()
})

describe("the README's examples", () => {
  it("Using the API: every command runs, and every request is answered without an HTTP error", () => {
    const [block] = shellBlocks("Using the API")
    expect(block).toContain("curl")
    const dir = mkdtempSync(`${TMP}readme-`)
    mkdirSync(join(dir, "data"))
    writeFileSync(join(dir, "data", "demo-merchant.json"), JSON.stringify(demo))
    const script = [
      "set -e",
      // any HTTP error fails the command, with the body shown
      "curl() { command curl --fail-with-body \"$@\"; }",
      block!.replaceAll("http://127.0.0.1:8080", server.baseUrl)
    ].join("\n")
    const run = spawnSync("bash", ["-c", script], { cwd: dir, encoding: "utf8", timeout: 60_000 })
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0)
    expect(run.stdout).toContain("\"total_deposited\":1000")
    expect(run.stdout).toContain("\"custom_id\":\"order-0001\"")
    // the conditional download printed its 304
    expect(run.stdout).toMatch(/\D304\n/)
  })
})
