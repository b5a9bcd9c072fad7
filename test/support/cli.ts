/**
 * The operator CLI as an operator runs it: a child process (`node dist/bundle/cli.mjs ...`, built
 * by globalSetup when stale, as `npm run cli` runs it) in an environment of the test's choosing.
 */
import { spawn } from "node:child_process"
import { expect } from "vitest"
import { ROOT } from "./paths.js"

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment without the variables the CLI reads, plus `env` (an undefined value removes one). */
const cleanEnv = (env: Record<string, string | undefined>) => {
  const base: Record<string, string> = { ...process.env as Record<string, string>, NO_COLOR: "1" }
  for (const name of ["OPS_URL", "ADMIN_TOKEN", "DATA_DIR"]) delete base[name]
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete base[name]
    else base[name] = value
  }
  return base
}

export const runCli = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["dist/bundle/cli.mjs", ...args], {
      cwd: ROOT,
      env: cleanEnv(env),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => {
      stdout += chunk
    })
    child.stderr.on("data", (chunk) => {
      stderr += chunk
    })
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })

/** Parses the stdout of a successful --json run. */
export const cliJson = (result: CliResult) => {
  expect(result.stderr, result.stderr).toBe("")
  expect(result.code).toBe(0)
  return JSON.parse(result.stdout)
}
