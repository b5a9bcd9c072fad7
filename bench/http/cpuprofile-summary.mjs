/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): self time by function, by package/file, and
 * inclusive ("total") time of the functions that matter, as a share of busy (non-idle) time.
 *
 *   node bench/http/cpuprofile-summary.mjs <file.cpuprofile> [--top 30] [--json] [--from µs --to µs]
 *
 * `from`/`to` restrict it to a window of the profile's clock (CLOCK_MONOTONIC in µs, the clock of
 * process.hrtime in any process), e.g. to leave out start-up.
 */
import { readFileSync } from "node:fs"

export const summarise = (profile, { top = 30, from = -Infinity, to = Infinity } = {}) => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

  const frameKey = (n) => {
    const f = n.callFrame
    return `${f.functionName || "(anonymous)"} ${shortUrl(f.url)}:${f.lineNumber + 1}`
  }

  const selfByFn = new Map()
  const totalByFn = new Map()
  const selfByPkg = new Map()
  let busy = 0
  let idle = 0
  const add = (map, key, v) => map.set(key, (map.get(key) ?? 0) + v)

  const { samples, timeDeltas } = profile
  let at = profile.startTime
  for (let i = 0; i < samples.length; i++) {
    at += timeDeltas[i] ?? 0
    if (at < from || at > to) continue
    // timeDeltas[i] is the time before sample i; attribute the gap to the sample that follows it
    const dt = (timeDeltas[i + 1] ?? timeDeltas[i] ?? 0) / 1000 // ms
    const node = byId.get(samples[i])
    const name = node.callFrame.functionName
    if (name === "(idle)") {
      idle += dt
      continue
    }
    busy += dt
    add(selfByFn, frameKey(node), dt)
    add(selfByPkg, packageOf(node.callFrame.url, name), dt)
    const seen = new Set()
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const n = byId.get(id)
      if (n.callFrame.functionName === "(root)") break
      const k = frameKey(n)
      if (seen.has(k)) continue
      seen.add(k)
      add(totalByFn, k, dt)
    }
  }
  const rank = (map) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([name, ms]) => ({ name, ms: Math.round(ms), pct: Math.round((ms / busy) * 1000) / 10 }))
  return {
    busyMs: Math.round(busy),
    idleMs: Math.round(idle),
    selfByFunction: rank(selfByFn),
    selfByPackage: rank(selfByPkg),
    totalByFunction: rank(totalByFn)
  }
}

const shortUrl = (url) => {
  if (!url) return ""
  const nm = url.lastIndexOf("node_modules/")
  if (nm >= 0) return url.slice(nm + "node_modules/".length)
  const dist = url.indexOf("/dist/src/")
  if (dist >= 0) return url.slice(dist + 1)
  return url.replace(/^file:\/\//, "")
}

const packageOf = (url, functionName) => {
  if (!url) return functionName.startsWith("(") ? functionName : "(native/V8 builtins)"
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:dist\/(?:esm|cjs|dist)\/)?(.*)$/)
  if (m) return `${m[1]}${m[1].startsWith("@effect/") || m[1] === "effect" ? ` ${m[2].replace(/^internal\//, "internal/")}` : ""}`
  if (url.includes("/dist/src/")) return `service ${url.slice(url.indexOf("/dist/src/") + 1)}`
  if (url.startsWith("node:")) return "node internals"
  return url
}

export const printSummary = (s, log = console.log) => {
  const table = (title, rows) => {
    log(`\n${title}`)
    for (const r of rows) log(`  ${String(r.pct).padStart(5)} %  ${String(r.ms).padStart(7)} ms  ${r.name}`)
  }
  log(`busy ${s.busyMs} ms, idle ${s.idleMs} ms`)
  table("self time by package / file (share of busy time)", s.selfByPackage)
  table("self time by function", s.selfByFunction)
  table("inclusive time by function", s.totalByFunction)
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2)
  const file = args.find((a) => a.endsWith(".cpuprofile"))
  if (!file) {
    console.error("usage: cpuprofile-summary.mjs <file.cpuprofile> [--top N] [--json]")
    process.exit(2)
  }
  const topIndex = args.indexOf("--top")
  const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 30
  const num = (name, fallback) => (args.indexOf(name) >= 0 ? Number(args[args.indexOf(name) + 1]) : fallback)
  const summary = summarise(JSON.parse(readFileSync(file, "utf8")), { top, from: num("--from", -Infinity), to: num("--to", Infinity) })
  if (args.includes("--json")) console.log(JSON.stringify(summary, null, 2))
  else printSummary(summary)
}
