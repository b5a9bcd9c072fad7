/**
 * A Markdown section (for bench/RESULTS.md) from bench/catalogue results files.
 *
 *   node bench/catalogue/report.mjs bench/catalogue/out/results-<timestamp>.json [more.json ...]
 *
 * With several files, each size is taken from the last file that has it.
 */
import { readFileSync } from "node:fs"

const GiB = 2 ** 30
const MiB = 2 ** 20
const r1 = (x, d = 0) => (x === undefined || x === null || Number.isNaN(x) ? "–" : (Math.round(x * 10 ** d) / 10 ** d).toLocaleString("en"))
const s = (ms) => `${r1(ms / 1000, 1)} s`

export const report = (files) => {
  const all = files.map((f) => JSON.parse(readFileSync(f, "utf8")))
  const out = []
  const line = (t = "") => out.push(t)
  const last = all[all.length - 1]
  line(
    `Machine: ${last.machine.nproc} vCPUs (${last.machine.cpuModel}), ${last.machine.memoryGiB} GiB RAM, Node ${last.machine.node}, PostgreSQL ${last.machine.postgres}.`
  )
  for (const r of all) {
    line(
      `Run ${r.date}: \`${r.command}\` on commit ${r.build?.commit ?? "?"}${r.build?.dirty ? " (+ uncommitted src changes)" : ""}` +
        `${r.build?.subject ? ` (${r.build.subject})` : ""}.`
    )
  }
  const sizes = new Map()
  let baseline
  for (const r of all) {
    if (r.baseline) baseline = r.baseline
    for (const [size, v] of Object.entries(r.sizes ?? {})) sizes.set(Number(size), { ...(sizes.get(Number(size)) ?? {}), ...v, run: r.date })
  }
  const ordered = [...sizes.entries()].sort((a, b) => a[0] - b[0])

  const http = ordered.filter(([, v]) => v.http)
  if (http.length) {
    line()
    line(
      "HTTP (autocannon, " +
        `${last.options.connections} connections, ${last.options.warmup} s warm-up + ${last.options.duration} s, ${last.options.rounds} rounds alternating service/bare; means):`
    )
    line()
    line("| items | endpoint | body | service req/s | p99 ms | CPU µs/req | bare req/s | p99 ms | CPU µs/req | req/s ratio | CPU ratio (bare/service) |")
    line("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (const [size, v] of http) {
      for (const [key, h] of Object.entries(v.http)) {
        line(
          `| ${r1(size)} | ${key === "search" ? "/items/search" : "/items (filtered)"} | ${r1(h.bytes / 1024, 1)} KiB, ${h.items} items |` +
            ` ${r1(h.service.rps)} | ${r1(h.service.p99)} | ${r1(h.service.cpuUsPerRequest)} | ${r1(h.bare.rps)} | ${r1(h.bare.p99)} | ${
              r1(h.bare.cpuUsPerRequest)
            } |` +
            ` **${r1(h.ratio, 2)}** | ${r1(h.bare.cpuUsPerRequest / h.service.cpuUsPerRequest, 2)} |`
        )
      }
    }
    for (const [, v] of http) {
      const e = Object.values(v.http)
      line()
      line(`URLs: ${e.map((h) => `\`${decodeURIComponent(h.path)}\``).join(", ")}.`)
      break
    }
  }

  line()
  line(
    "Memory (resident size after a forced full GC through the inspector, once the index is loaded and the first dump built; the dump's gzip is held in memory) and load time (spawn of `node dist/src/main.js` to the `catalogue loaded` log, populated database):"
  )
  line()
  line(
    "| items | RSS | V8 heap used | external (dump gzip) | (RSS − baseline) per 1,000,000 items | peak RSS seen | load: spawn → loaded | spawn → /ready | start mode |"
  )
  line("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
  if (baseline) {
    const m = baseline.memory
    line(
      `| 0 | ${r1(m.rss / MiB)} MiB | ${r1(m.heapUsed / MiB)} MiB | ${r1(m.external / MiB)} MiB | – | ${r1(m.hwm / MiB)} MiB | ${s(baseline.start.loadMs)} | ${
        s(baseline.start.readyMs)
      } | baseline |`
    )
  }
  for (const [size, v] of ordered) {
    const m = v.memory
    if (!m) continue
    const start = v.start ?? v.dump?.start
    const perM = baseline ? ((m.rss - baseline.memory.rss) / size) * 1e6 : undefined
    line(
      `| ${r1(size)} | ${r1(m.rss / MiB)} MiB | ${r1(m.heapUsed / MiB)} MiB | ${r1(m.external / MiB)} MiB | **${r1(perM / GiB, 2)} GiB** (${
        r1(perM / 1e9, 2)
      } GB) |` +
        ` ${r1(Math.max(m.hwm, v.dump?.rssTimeline ? Math.max(...v.dump.rssTimeline.map((x) => x.rss)) : 0) / MiB)} MiB | ${s(start.loadMs)} | ${
          s(start.readyMs)
        } |` +
        ` ${v.reconcileAtStart ? `leader (reconcile at start: ${v.reconcileAtStart.changes} changes, ${s(v.reconcileAtStart.ms)})` : "follower"} |`
    )
  }

  const pop = ordered.filter(([, v]) => v.populate && v.populate.method !== "reused")
  if (pop.length) {
    line()
    line("Populating the database:")
    line()
    for (const [size, v] of pop) {
      const p = v.populate
      if (p.method === "sync") {
        line(
          `- ${r1(p.from)} → ${r1(size)} items by the service's own supplier sync (SIM_CATALOGUE_SIZE=${size}): reconcile ${s(p.ms)}` +
            ` (${r1(p.changes / (p.ms / 1000))} items/s, ${p.changes} changes logged), index caught up ${s(p.caughtUpMs)} after spawn, service CPU ${
              s(p.cpuMs)
            }.`
        )
      } else {
        line(
          `- ${r1(p.from)} → ${r1(size)} items by COPY (bench/catalogue/seed.mjs): ${s(p.ms)}` +
            `${p.verifiedRows ? `; ${p.verifiedRows} rows written by the sync compared byte-identical with seed.mjs's` : ""}.`
        )
      }
    }
  }

  const dumps = ordered.filter(([, v]) => v.dump)
  if (dumps.length) {
    line()
    line(
      "Dump regeneration (service following, the bench holds the sync leader's lock; DUMP_INTERVAL_SECONDS=" +
        `${
          dumps[0][1].dump.interval
        }; /health on the ops port probed every ${last.options.probeMs} ms; event-loop delay = prom-client's monitorEventLoopDelay max per 1 s scrape):`
    )
    line()
    line(
      "| items | regeneration | gzip | JSON | worst /health | worst event-loop delay | longest main-thread CPU within one /health probe | main thread over the regeneration: CPU / waiting for a CPU | GC in the regeneration (major / minor), longest pause bucket | machine busy |"
    )
    line("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for (const [size, v] of dumps) {
      const d = v.dump
      line(
        `| ${r1(size)} | first (at start) ${s(d.start.firstDump.millis)} | ${r1(d.start.firstDump.gzipBytes / MiB)} MiB | ${
          r1(d.start.firstDump.jsonBytes / MiB)
        } MiB | – | – | – | – | – | – |`
      )
      for (const g of d.regenerations) {
        line(
          `| ${r1(size)} | **${s(g.millis)}** | ${r1(g.gzipBytes / MiB)} MiB | ${r1(g.jsonBytes / MiB)} MiB | **${r1(g.worstProbeMs)} ms** | ${
            r1(g.eventLoopDelayMaxMs)
          } ms |` +
            ` ${g.busiestProbe ? `${r1(g.busiestProbe.mainThreadCpuMs)} ms (probe ${r1(g.busiestProbe.ms)} ms)` : "–"} |` +
            ` ${g.sched ? `${s(g.sched.mainThreadCpuMs)} / ${s(g.sched.mainThreadRunQueueWaitMs)}` : "–"} |` +
            ` ${
              g.gc
                ? `${r1(g.gc.majorMs)} ms / ${r1(g.gc.minorMs)} ms; ${Object.entries(g.gc.longestPause ?? {}).map(([k, b]) => `${k} ${b}`).join(", ")}`
                : "–"
            } |` +
            ` ${g.sched ? `${r1(g.sched.machineBusyCores, 2)} of ${g.sched.cores} cores` : "–"} |`
        )
      }
      line(
        `| ${r1(size)} | between regenerations | | | ${r1(d.idle.worstProbeMs)} ms | ${r1(d.idle.eventLoopDelayMaxMs)} ms | ${
          d.idle.busiestProbeCpuMs !== undefined ? `${r1(d.idle.busiestProbeCpuMs)} ms` : "–"
        } | | | |`
      )
    }
  }
  return out.join("\n")
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = process.argv.slice(2)
  if (files.length === 0) {
    console.error("usage: node bench/catalogue/report.mjs results.json [...]")
    process.exit(2)
  }
  console.log(report(files))
}
