/** What the results record about where they were measured: the machine, node, PostgreSQL and the revision. */
import { execSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { cpus, freemem, totalmem } from "node:os"
import { ROOT, round } from "./basics.mjs"
import { withAdminClient } from "./postgres.mjs"

export const machineInfo = async () => {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8")
  const postgres = await withAdminClient((c) => c.query("SHOW server_version")).then((r) => r.rows[0].server_version)
  let revision = "unknown"
  try {
    // git's own complaint (outside a checkout) is not the benchmark's output
    const git = (command) => execSync(command, { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim()
    revision = git("git rev-parse --short HEAD") + (git("git status --porcelain src") === "" ? "" : " (src modified)")
  } catch {
    // not a git checkout: the revision stays unknown
  }
  return {
    revision,
    nproc: Number(execSync("nproc").toString().trim()),
    cpuModel: cpuinfo.match(/model name\s*:\s*(.*)/)?.[1] ?? cpus()[0]?.model,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    freeMemoryGiB: round(freemem() / 2 ** 30, 1),
    node: process.version,
    postgres
  }
}
