/**
 * The README's "Using the API" block runs as written against a running service (test mode, the
 * demo merchant), every curl failing the test on an HTTP error; only the service's address is
 * replaced by the test server's.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, symlinkSync } from "node:fs"
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

const demoOf = (server: RunningServer) => JSON.parse(readFileSync(join(server.database.dataDir, "demo-merchant.json"), "utf8"))

let server: RunningServer
beforeAll(async () => {
  // the demo merchant is made at the first start; one whose wallet creation answer the simulator
  // loses (one in ten, by its id) would make the block's wallet request a 502: start again
  for (;;) {
    server = await startServer({ env: { DEMO_MERCHANT: "true", WALLET_ISSUANCE_ENABLED: "true" } })
    if (!losesCreationAnswer(demoOf(server).merchant_id, "tron")) break
    await server.stop()
  }
  const key = demoOf(server).api_key
  await pollUntil("the catalogue synced", async () => ((await server.api("/items?limit=1", { key })).json?.items?.length > 0 ? true : undefined))
}, 180_000)
afterAll(async () => {
  await server?.stop()
})

describe("the README's examples", () => {
  it("Using the API: every command runs, and every request is answered without an HTTP error", () => {
    const [block] = shellBlocks("Using the API")
    expect(block).toContain("curl")
    const dir = mkdtempSync(`${TMP}readme-`)
    symlinkSync(server.database.dataDir, join(dir, "data"))
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
