/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): self time by function, by package/file, and
 * inclusive ("total") time of the functions that matter, as a share of busy (non-idle) time.
 * Frames of a bundle with a source map beside it (dist/bundle/main.mjs.map) are mapped back to
 * their original package or source file.
 *
 *   node bench/http/cpuprofile-summary.mjs <file.cpuprofile> [--top 30] [--json] [--from µs --to µs]
 *
 * `from`/`to` restrict it to a window of the profile's clock (CLOCK_MONOTONIC in µs, the clock of
 * process.hrtime in any process), e.g. to leave out start-up.
 */
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

/**
 * A source map (`<file>.map` beside a bundle) as a lookup from a generated (line, column), both
 * 0-based, to the original source file and 0-based line; null where there is no map.
 */
const sourceMapFor = (() => {
  const cache = new Map()
  const load = (url) => {
    if (!url.startsWith("file://")) return null
    const file = fileURLToPath(url)
    if (!existsSync(`${file}.map`)) return null
    const map = JSON.parse(readFileSync(`${file}.map`, "utf8"))
    const base = new URL(".", url)
    const sources = map.sources.map((s) => new URL(s, base).href)
    const lines = []
    let source = 0, origLine = 0
    for (const lineText of map.mappings.split(";")) {
      const segments = []
      let genCol = 0
      for (const seg of lineText.split(",")) {
        if (seg === "") continue
        const values = []
        let value = 0, shift = 0
        for (const ch of seg) {
          const digit = BASE64.indexOf(ch)
          value += (digit & 31) << shift
          if (digit & 32) shift += 5
          else {
            values.push(value & 1 ? -(value >>> 1) : value >>> 1)
            value = 0
            shift = 0
          }
        }
        genCol += values[0]
        if (values.length >= 4) {
          source += values[1]
          origLine += values[2]
          segments.push([genCol, source, origLine])
        }
      }
      lines.push(segments)
    }
    return (line, column) => {
      const segments = lines[line]
      if (segments === undefined || segments.length === 0) return null
      let lo = 0, hi = segments.length - 1, found = -1
      while (lo <= hi) {
        const mid = (lo + hi) >> 1
        if (segments[mid][0] <= column) {
          found = mid
          lo = mid + 1
        } else hi = mid - 1
      }
      if (found < 0) return null
      return { url: sources[segments[found][1]], line: segments[found][2] }
    }
  }
  return (url) => {
    if (!cache.has(url)) {
      let lookup = null
      try {
        lookup = load(url)
      } catch {
        lookup = null
      }
      cache.set(url, lookup)
    }
    return cache.get(url)
  }
})()

/** The original position of a call frame, through a bundle's source map when there is one. */
const originalFrame = (callFrame) => {
  const lookup = sourceMapFor(callFrame.url)
  const mapped = lookup?.(callFrame.lineNumber, callFrame.columnNumber)
  return mapped ? { ...callFrame, url: mapped.url.replace(/\.ts$/, ".ts"), lineNumber: mapped.line } : callFrame
}

export const summarise = (profile, { top = 30, from = -Infinity, to = Infinity } = {}) => {
  const byId = new Map(profile.nodes.map((n) => [n.id, { ...n, callFrame: originalFrame(n.callFrame) }]))
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
  const rank = (map) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
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
  const src = url.match(/\/(src\/.*\.ts)$/)
  if (src) return src[1]
  return url.replace(/^file:\/\//, "")
}

const packageOf = (url, functionName) => {
  if (!url) return functionName.startsWith("(") ? functionName : "(native/V8 builtins)"
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:dist\/(?:esm|cjs|dist)\/)?(.*)$/)
  if (m) return `${m[1]}${m[1].startsWith("@effect/") || m[1] === "effect" ? ` ${m[2].replace(/^internal\//, "internal/")}` : ""}`
  if (url.includes("/dist/src/")) return `service ${url.slice(url.indexOf("/dist/src/") + 1)}`
  const src = url.match(/\/(src\/.*\.ts)$/)
  if (src) return `service ${src[1]}`
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
