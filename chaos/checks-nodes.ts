/**
 * The nodes' own health through a chaos run:
 * - faults: each injected fault ended with its node ready again, and each drained process exited 0;
 * - logs: no process logged an ERROR or FATAL line, restarted a supervised fiber for anything but a
 *   lost database connection (the expected WARN after a cut), or crashed; every supervised fiber of
 *   the nodes up at the end runs (GET /ops/fibers);
 * - 5xx: the only 5xx answers are 500 with the internal error code (MERCHANT_INTERNAL_ERROR;
 *   INTERNAL_ERROR on the admin API) within a few seconds of a fault, besides the documented ones:
 *   503 FEED_NOT_READY for a dump while a node starts, and 502 MERCHANT_WALLET_PROVIDER_UNAVAILABLE
 *   where the simulated provider loses a creation's answer on purpose.
 */
import { losesCreationAnswer } from "../src/Providers/Simulator/WalletProviderSim.js"
import type { Sent } from "../test/support/traffic.js"
import type { Cluster } from "./cluster.js"
import type { Fault } from "./faults.js"
import { settle } from "./reads.js"
import { type Answer, type Check, clock, tally } from "./report.js"

/** How long after a fault's end its 500s are still its own. */
export const FAULT_GRACE_MS = 5_000

export const faultCheck = (cluster: Cluster, faults: ReadonlyArray<Fault>, durationS: number): Check => {
  const problems = faults.flatMap((f) => f.problem === undefined ? [] : [f.problem])
  if (faults.length === 0) problems.push("no fault was injected")
  const restarts = cluster.incarnations.length - 2
  return {
    name: "faults injected and recovered",
    figures: `${faults.length} in ${durationS} s: ${tally(faults.map((f) => f.kind))}; ${restarts} processes started again; ` +
      `ready again after ${faults.map((f) => f.endedAt === undefined ? "never" : `${((f.endedAt - f.startedAt) / 1000).toFixed(1)}`).join(", ")} s`,
    problems
  }
}

interface Fibers {
  readonly fibers: ReadonlyArray<{ readonly name: string; readonly state: string; readonly restarts: number }>
}

/** A log line without its stack frames: the message, the error and its causes. */
const brief = (line: string): string => {
  let text = line
  try {
    const parsed = JSON.parse(line) as { timestamp?: string; message?: unknown; annotations?: unknown }
    text = `${parsed.timestamp ?? ""} ${[parsed.message].flat().join(" | ")} ${JSON.stringify(parsed.annotations ?? {})}`
  } catch {
    // not one of the service's JSON lines (a crash's trace): as it is
  }
  return text.split("\n").filter((l) => !/^\s+at /.test(l)).join(" / ").slice(0, 1_500)
}

export const logCheck = async (cluster: Cluster): Promise<Check> => {
  const problems: Array<string> = []
  let warnings = 0
  let errorLines = 0
  for (const { slot, number, server, end } of cluster.incarnations) {
    const name = `node ${slot} process ${number} (pid ${server.process.pid})`
    for (const line of server.unexpectedErrors()) problems.push(`${name}: ${brief(line)}`)
    errorLines += server.unexpectedErrors().length
    warnings += (server.output().match(/supervised fiber lost its database connection; restarting/g) ?? []).length
    if (end === undefined && server.process.exitCode !== null) problems.push(`${name} exited on its own with ${server.process.exitCode}`)
  }
  // every supervised fiber of the live nodes running (a restart after a cut may still be under way)
  const live = cluster.live()
  const fibers = await settle(async () => {
    const lists = await Promise.all(live.map((node) => node.admin("/ops/fibers").then((r) => r.json as Fibers)))
    return { done: lists.every((l) => l.fibers.every((f) => f.state === "running")), value: lists }
  }, 60_000)
  for (const [i, list] of fibers.value.entries()) {
    for (const f of list.fibers.filter((f) => f.state !== "running")) problems.push(`node ${i}: fiber ${f.name} is ${f.state}`)
  }
  const count = fibers.value.reduce((n, l) => n + l.fibers.length, 0)
  const restarts = fibers.value.reduce((n, l) => n + l.fibers.reduce((r, f) => r + f.restarts, 0), 0)
  return {
    name: "node logs and fibers",
    figures:
      `${cluster.incarnations.length} processes: ${errorLines} ERROR/FATAL lines or other fiber restarts; ${warnings} fiber restarts for a lost database connection (WARN, after cuts); ` +
      `${count} supervised fibers running on the ${live.length} nodes up at the end (${restarts} restarts since their start)`,
    problems
  }
}

/** An answer as the 5xx check sees it, with what it answered. */
interface Seen extends Answer {
  readonly what: string
}

/** Every answer of the run: the traffic's writes and the other clients'. */
const everyAnswer = (sent: ReadonlyArray<Sent>, others: ReadonlyArray<Answer>): Array<Seen> => [
  ...sent.flatMap((s) =>
    s.answers.map((a) => ({
      ...a,
      source: s.kind,
      admin: s.kind === "deposit" || s.kind === "catalogue",
      what: `${s.kind} ${String(s.body["custom_id"] ?? s.body["tx_id"] ?? "")}`.trim()
    }))
  ),
  ...others.map((a) => ({ ...a, what: a.source }))
]

export const serverErrorCheck = (sent: ReadonlyArray<Sent>, others: ReadonlyArray<Answer>, faults: ReadonlyArray<Fault>): Check => {
  const answers = everyAnswer(sent, others)
  const nearFault = (at: number) => faults.some((f) => at >= f.startedAt && at <= (f.endedAt ?? Infinity) + FAULT_GRACE_MS)
  const problems: Array<string> = []
  const serverErrors = answers.filter((a) => a.status >= 500)
  for (const a of serverErrors) {
    const internal = a.status === 500 && a.code === (a.admin ? "INTERNAL_ERROR" : "MERCHANT_INTERNAL_ERROR")
    const documented = (a.status === 503 && a.code === "FEED_NOT_READY") ||
      (a.status === 502 && a.code === "MERCHANT_WALLET_PROVIDER_UNAVAILABLE" && a.wallet !== undefined &&
        (losesCreationAnswer(a.wallet.merchantId, a.wallet.network) || nearFault(a.at)))
    if (documented || (internal && nearFault(a.at))) continue
    problems.push(`${a.what} on ${a.node} at ${clock(a.at)}: ${a.status} ${String(a.code)}${nearFault(a.at) ? "" : ", with no fault near"}`)
  }
  const transport = answers.filter((a) => a.status === 0)
  const farTransport = transport.filter((a) => !nearFault(a.at)).length
  return {
    name: "5xx only as faults explain",
    figures: `${answers.length} answers; 5xx: ${tally(serverErrors.map((a) => `${a.status} ${String(a.code)}`))}; ` +
      `no answer (transport error): ${transport.length} (${farTransport} with no fault near); window: a fault until ${
        FAULT_GRACE_MS / 1000
      } s after its node is ready`,
    problems
  }
}
