/**
 * The faults, injected one at a time at random moments on a random node until the run's end:
 * - kill -9: SIGKILL, then a new process on the same database;
 * - cut: every PostgreSQL connection of the node reset at once (a failover, pg_terminate_backend);
 * - cut and refused: the same, and new connections refused for 2 to 6 s (a database restarting);
 * - graceful restart: SIGTERM, its exit awaited (the drain), then a new process.
 * A fault lasts from its injection until the node is ready again (`/ready` 200).
 */
import { sleep } from "../test/support/polling.js"
import type { Cluster } from "./cluster.js"
import { log } from "./report.js"

export const FAULT_KINDS = ["kill -9", "cut", "cut and refused", "graceful restart"] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

export interface Fault {
  readonly kind: FaultKind
  readonly slot: number
  readonly startedAt: number
  /** When the node was ready again; undefined if it never was. */
  endedAt: number | undefined
  /** Figures: connections cut, refusal length, the exit of a stopped process. */
  detail: string
  /** What went wrong with the fault itself (a node that did not come back, a drain that did not end with exit 0). */
  problem?: string
}

/** Resolves when the node's `/ready` answers 200; false after `timeoutMs`. */
const readyAgain = async (opsUrl: string, timeoutMs = 60_000): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await fetch(`${opsUrl}/ready`).then((r) => r.status === 200, () => false)) return true
    await sleep(100)
  }
  return false
}

const inject = async (cluster: Cluster, fault: Fault, random: () => number): Promise<void> => {
  const { slot } = fault
  const proxy = cluster.proxies[slot]!
  switch (fault.kind) {
    case "kill -9":
    case "graceful restart": {
      const ended = await cluster.end(slot, fault.kind === "kill -9" ? "SIGKILL" : "SIGTERM")
      const { exitCode, signal } = ended.end!
      fault.detail = `pid ${ended.server.process.pid} ended ${signal ?? `with exit code ${exitCode}`} after ${
        ((ended.end!.at - fault.startedAt) / 1000).toFixed(1)
      } s`
      if (fault.kind === "graceful restart" && exitCode !== 0) fault.problem = `the drained process ended ${signal ?? `with exit code ${exitCode}`}, not 0`
      await cluster.restart(slot)
      break
    }
    case "cut":
      fault.detail = `${proxy.cut()} connections cut`
      if (!await readyAgain(cluster.servers[slot]!.opsUrl)) throw new Error("not ready 60 s after the cut")
      break
    case "cut and refused": {
      const refusalMs = 2_000 + Math.floor(random() * 4_000)
      proxy.refuse()
      const cut = proxy.cut()
      await sleep(refusalMs)
      proxy.accept()
      fault.detail = `${cut} connections cut, new ones refused for ${(refusalMs / 1000).toFixed(1)} s (${proxy.refused()} refused so far)`
      if (!await readyAgain(cluster.servers[slot]!.opsUrl)) throw new Error("not ready 60 s after the refusal ended")
      break
    }
  }
}

/**
 * Injects faults from now until `until` (each of the four kinds once, in random order, then at
 * random), 2 to 6 s apart; a fault under way at `until` is finished. Stops early when a node did
 * not come back. The faults, in order.
 */
export const injectFaults = async (cluster: Cluster, until: number, random: () => number): Promise<Array<Fault>> => {
  const faults: Array<Fault> = []
  const order = [...FAULT_KINDS].sort(() => random() - 0.5)
  for (;;) {
    const pause = 2_000 + Math.floor(random() * 4_000)
    await sleep(Math.min(pause, until - Date.now()))
    if (Date.now() >= until) break
    const kind = order[faults.length] ?? FAULT_KINDS[Math.floor(random() * FAULT_KINDS.length)]!
    const fault: Fault = { kind, slot: random() < 0.5 ? 0 : 1, startedAt: Date.now(), endedAt: undefined, detail: "" }
    faults.push(fault)
    log(`fault: ${kind} on node ${fault.slot}`)
    try {
      await inject(cluster, fault, random)
      fault.endedAt = Date.now()
      log(`fault: ${kind} on node ${fault.slot}: ${fault.detail}; ready again after ${((fault.endedAt - fault.startedAt) / 1000).toFixed(1)} s`)
    } catch (error) {
      fault.problem = `${kind} on node ${fault.slot}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`
      log(`fault: ${fault.problem}; no more faults`)
      break
    }
  }
  return faults
}
