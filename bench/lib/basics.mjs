/**
 * What every benchmark module uses: the repository's root, sleeping and printing, rounding and the
 * figures' statistics, and the command line's options.
 */
import { fileURLToPath } from "node:url"

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
export const log = (...a) => console.log(...a)
export const round = (x, d = 0) => Math.round(x * 10 ** d) / 10 ** d
export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
/** The middle value (the mean of the two middle ones for an even count). */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
/** The middle value; for an even count the higher of the two middle ones (a value that was measured). */
export const upperMedian = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
/** Nearest-rank percentile of a sorted numeric array. */
export const percentileSorted = (sorted, p) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]

/**
 * `--name value` options over `defaults`, each of the default's type: a number, a string, or a
 * boolean (`--name` sets it, `--no-name` clears it).
 */
export const argOptions = (argv, defaults) => {
  const out = { ...defaults }
  for (const key of Object.keys(defaults)) {
    const i = argv.indexOf(`--${key}`)
    if (i < 0) continue
    if (typeof defaults[key] === "boolean") out[key] = true
    else if (typeof defaults[key] === "number") out[key] = Number(argv[i + 1])
    else out[key] = argv[i + 1]
  }
  for (const key of Object.keys(defaults)) if (typeof defaults[key] === "boolean" && argv.includes(`--no-${key}`)) out[key] = false
  return out
}
