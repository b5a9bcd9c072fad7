/**
 * bench/stream: the realtime catalogue feed (CONTRACT 3) under many WebSocket clients, beside a
 * bare `ws` server broadcasting the same frames, in the same run.
 *
 *   node bench/stream/run.mjs [--scenarios 1000x1000,5000x100] [--source external|sim] [--duration 45]
 *                             [--warmup 10] [--idle 15] [--catalogue 20000] [--bare buffer[,string]] [--profile]
 *
 * Each scenario is CLIENTSxCHANGES_PER_SECOND. A scenario listed more than once
 * (`--scenarios 1000x1000,1000x1000,1000x1000`) is measured in rounds, and the summary adds the
 * ratio of the rounds' means. For each:
 *  1. A fresh database on BENCH_PG_URL's server; the built service (`node dist/src/main.js`) with
 *     SIM_CATALOGUE_SIZE=--catalogue, rate limits raised.
 *  2. The changes, --source:
 *     external (default): SIM_CHURN_PER_SECOND=0 and bench/stream/writer.mjs (child process)
 *       writes the rate into the change log, one transaction per 100 ms with the simulator's mix
 *       (half price changes, a quarter delistings, a quarter relistings), with ChangeLog.apply's
 *       statements, as the sync leader of another node would (CONTRACT 1): the offered rate does
 *       not depend on the service under test, which only tails the log and feeds the clients.
 *     sim: SIM_CHURN_PER_SECOND=the rate; the service's own simulator and sync leader write the
 *       changes in the same process. The simulator owes changes per 100 ms tick of its own clock,
 *       so when the process is short of CPU fewer changes are made: the logged rate is printed.
 *  3. Idle: --idle seconds with no feed client: the service's CPU for the changes alone.
 *  4. Service: a separate client process (bench/stream/clients.mjs) opens the clients (the
 *     external writer pauses meanwhile): the first from a full dump's X-Catalog-Cursor/Epoch, each
 *     next one from the freshest position a client has reached (a valid resume point). After
 *     --warmup seconds, a --duration window: changes delivered (each client checks every frame
 *     starts right after its previous cursor: cursor - previous == number of changes), latency
 *     of each change to each client, and CPU time of the service process per delivered change.
 *     Latency `fromTransactionStart`: from catalogue_changes.created_at (the writing transaction's
 *     now(), its start: an overstatement); `fromCommit`: from the arrival of that transaction's
 *     pg_notify (sent at commit, payload its last seq) at this script's LISTEN connection (a
 *     slight understatement). The target is judged on the first. Afterwards every client must
 *     reach the log's head as of the window's end.
 *  5. The service is stopped; the bare baseline (bench/stream/bare-server.mjs, child process)
 *     replays the window's frames at their timing to as many clients from a new client process:
 *     with --source external the writer's frames (the offered load, the same bytes the feed
 *     builds for each batch, at their commit times), with --source sim the frames client 0 got.
 *     Same figures (latency from the broadcast's start); its window is the replay. --bare lists
 *     send modes: `buffer` (default: each frame encoded once, ws.send(Buffer) to every client,
 *     the idiomatic `ws` broadcast) and `string` (ws.send(string): `ws` encodes per client).
 * --entry: a service entry other than npm start's (e.g. a copy of dist/ made before a change);
 * --nodeArgs: node flags for the service beside npm start's.
 * --profile: the service phase runs under `node --cpu-prof` (figures then include the profiler's
 * overhead); a summary of the window is printed and the profile kept in bench/stream/out/.
 *
 * All processes share the machine: the client process, the server under test and PostgreSQL
 * each get their CPU share reported ("rest" is everything else, other tenants included).
 *
 * The parts: a scenario (scenario.mjs): the feed set up (feed.mjs), the service's phases
 * (service-phase.mjs), the bare's (bare-phase.mjs), the measured window against either
 * (window.mjs); what is printed (report.mjs).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { argOptions, buildIfNeeded, log, machineInfo } from "../lib/harness.mjs"
import { printSummary } from "./report.mjs"
import { runScenario } from "./scenario.mjs"

const HERE = fileURLToPath(new URL("./", import.meta.url))
const OUT = join(HERE, "out")

const argv = process.argv.slice(2)
const opts = argOptions(argv, {
  scenarios: "1000x1000,5000x100",
  duration: 45,
  warmup: 10,
  idle: 15,
  catalogue: 20000,
  bare: "buffer",
  parallel: 50,
  profile: false,
  source: "external",
  quietBusy: 25,
  waitQuiet: 60,
  entry: "",
  nodeArgs: ""
})

const scenarios = opts.scenarios.split(",").map((s) => {
  const [clients, rate] = s.split("x").map(Number)
  return { clients, rate }
})

const main = async () => {
  const started = new Date()
  const info = await machineInfo()
  log(`bench/stream ${started.toISOString()}`)
  log(`machine: ${info.nproc} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB, node ${info.node}, PostgreSQL ${info.postgres}; revision ${info.revision}`)
  log(`settings: ${JSON.stringify(opts)}`)
  buildIfNeeded()
  mkdirSync(OUT, { recursive: true })
  const dir = mkdtempSync(join(OUT, `run-${started.toISOString().replace(/[:.]/g, "-")}-`))
  const results = { date: started.toISOString(), command: `node bench/stream/run.mjs ${argv.join(" ")}`.trim(), machine: info, options: opts, scenarios: [] }
  for (const s of scenarios) results.scenarios.push(await runScenario(opts, s, dir))
  printSummary(results)
  const file = join(OUT, `results-${started.toISOString().replace(/[:.]/g, "-")}.json`)
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n")
  log(`\nresults: ${file}`)
  if (!opts.profile) rmSync(dir, { recursive: true, force: true })
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
