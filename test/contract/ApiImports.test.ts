/**
 * The contracts stand alone: importing src/Api.ts (the merchant API) or src/cli.ts (the admin
 * API's client) loads the contract files, Domain/ and the platform, never the database or a
 * service. An ES module's static imports are all loaded before it runs, so the graph esbuild
 * resolves from the entry (type-only imports elided, as tsx and tsc do) is what an import loads.
 */
import { build } from "esbuild"
import { describe, expect, it } from "vitest"
import { ROOT } from "../support/paths.js"

/** The project files (relative to the root) that importing `entry` loads. */
const loadedBy = async (entry: string): Promise<ReadonlyArray<string>> => {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: "node",
    format: "esm",
    packages: "external",
    logLevel: "silent"
  })
  return Object.keys(result.metafile.inputs).filter((file) => file.startsWith("src/")).sort()
}

/** Contract files: each feature's Api.ts, the API itself and the admin API. */
const isContract = (file: string) => /^src\/(\w+\/)?Api\.ts$/.test(file) || file === "src/Ops/AdminApi.ts"

/** What a contract may load besides contracts and Domain/, and why. */
const ALSO_ALLOWED: ReadonlyMap<string, string> = new Map([
  ["src/ApiDocument.ts", "the OpenAPI documents' completion: plain JSON transforms"],
  ["src/ApiReference.ts", "the OpenAPI documents' reference texts"]
])

const isAllowed = (file: string) => isContract(file) || file.startsWith("src/Domain/") || ALSO_ALLOWED.has(file)

describe("contract files load only contracts, Domain/ and the platform", () => {
  it("src/Api.ts loads no database module and no service", async () => {
    const loaded = await loadedBy("src/Api.ts")
    // the graph is the real one, not an empty answer
    expect(loaded).toEqual(expect.arrayContaining(["src/Api.ts", "src/Merchants/Api.ts", "src/Domain/Page.ts"]))
    expect(loaded.filter((file) => file.startsWith("src/Db/"))).toEqual([])
    expect(loaded.filter((file) => !isAllowed(file))).toEqual([])
  })

  it("the CLI loads the admin contract, not the services it calls", async () => {
    const loaded = await loadedBy("src/cli.ts")
    expect(loaded).toEqual(expect.arrayContaining(["src/cli.ts", "src/Ops/AdminApi.ts"]))
    expect(loaded.filter((file) => file.startsWith("src/Db/"))).toEqual([])
    const cliOwn = (file: string) =>
      file === "src/cli.ts" || file.startsWith("src/Cli/") ||
      // `cli webhook verify` checks a signature as a receiver would: a pure function of node:crypto
      file === "src/Webhooks/Signature.ts"
    expect(loaded.filter((file) => !isAllowed(file) && !cliOwn(file))).toEqual([])
  })
})
