/**
 * A real HAProxy in front of the service's nodes, run from the configuration the repository ships
 * (ops/haproxy/haproxy.cfg) with only its ports changed, in the foreground (`haproxy -f FILE -db`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { ROOT, TMP } from "./paths.js"

export const SHIPPED_CONFIG = `${ROOT}ops/haproxy/haproxy.cfg`

export interface NodePorts {
  readonly api: number
  readonly ops: number
}

/**
 * The shipped configuration with the test's ports: the `api` frontend's and the `stats` frontend's
 * binds, and each server line's API and health-check ports, in order. Throws when the file does
 * not have exactly those lines, so a change to its shape is noticed here.
 */
export const withPorts = (shipped: string, ports: { readonly front: number; readonly stats: number; readonly nodes: ReadonlyArray<NodePorts> }) => {
  let section = ""
  let binds = 0
  let servers = 0
  const lines = shipped.split("\n").map((line) => {
    const header = line.match(/^(\w+)\s+(\S+)?/)
    if (header !== null && !line.startsWith(" ")) section = `${header[1]} ${header[2] ?? ""}`.trim()
    const bind = line.match(/^(\s+bind\s+[\d.]+):\d+(.*)$/)
    if (bind !== null) {
      binds++
      if (section === "frontend api") return `${bind[1]}:${ports.front}${bind[2]}`
      if (section === "frontend stats") return `${bind[1]}:${ports.stats}${bind[2]}`
      throw new Error(`a bind in section ${section}`)
    }
    const server = line.match(/^(\s+server\s+\S+\s+[\d.]+):\d+(.*\scheck port )\d+(.*)$/)
    if (server !== null) {
      const node = ports.nodes[servers++]
      if (node === undefined) throw new Error("more server lines than nodes")
      return `${server[1]}:${node.api}${server[2]}${node.ops}${server[3]}`
    }
    return line
  })
  if (binds !== 2 || servers !== ports.nodes.length) throw new Error(`expected 2 binds and ${ports.nodes.length} servers, found ${binds} and ${servers}`)
  return lines.join("\n")
}

export interface RunningHaproxy {
  readonly url: string
  /** Each server's state as the stats page says it (UP, DOWN, "UP 1/2", MAINT...), by name. */
  readonly states: () => Promise<Record<string, string>>
  readonly output: () => string
  readonly stop: () => Promise<void>
}

export const haproxyBinary = () => existsSync("/usr/sbin/haproxy") ? "/usr/sbin/haproxy" : "haproxy"

export const startHaproxy = async (ports: { readonly front: number; readonly stats: number; readonly nodes: ReadonlyArray<NodePorts> }) => {
  const file = `${TMP}haproxy-${ports.front}.cfg`
  writeFileSync(file, withPorts(readFileSync(SHIPPED_CONFIG, "utf8"), ports))
  const child: ChildProcess = spawn(haproxyBinary(), ["-f", file, "-db"], { stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.on("data", (chunk) => output += chunk)
  child.stderr!.on("data", (chunk) => output += chunk)
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const statsUrl = `http://127.0.0.1:${ports.stats}/stats;csv`
  const states = async () => {
    const csv = await fetch(statsUrl).then((r) => r.text())
    const [header, ...rows] = csv.replace(/^# /, "").trim().split("\n").map((line) => line.split(","))
    const at = (name: string) => header!.indexOf(name)
    return Object.fromEntries(
      rows.filter((row) => row[at("pxname")] === "nodes" && row[at("svname")] !== "BACKEND").map((row) => [row[at("svname")], row[at("status")]])
    )
  }
  const deadline = Date.now() + 10_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}):\n${output}`)
    if (await states().then(() => true, () => false)) break
    if (Date.now() > deadline) throw new Error(`haproxy's stats did not answer:\n${output}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  const running: RunningHaproxy = {
    url: `http://127.0.0.1:${ports.front}`,
    states,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM")
      await exited
    }
  }
  return running
}
