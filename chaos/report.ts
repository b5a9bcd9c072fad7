/**
 * What the chaos command records and prints: every answer a client got besides the write traffic's
 * own (wallets, balance reads, dumps, restocking), the verdict of each invariant with its figures,
 * and a clock from the command's start.
 */

/** An answer a client got: its status (0 when the connection failed without one) and error code. */
export interface Answer {
  /** What sent it: `wallet`, `balance`, `dump`, `restock` (the traffic's writes are kept in Sent). */
  readonly source: string
  /** True for the admin API (its internal error is INTERNAL_ERROR, the merchant API's MERCHANT_INTERNAL_ERROR). */
  readonly admin: boolean
  readonly status: number
  readonly code: unknown
  readonly at: number
  /** The node's API URL. */
  readonly node: string
  /** A wallet request's merchant and network. */
  readonly wallet?: { readonly merchantId: string; readonly network: "tron" | "bsc" }
}

export type AnswerLog = Array<Answer>

/** The `error.code` of a JSON answer, if it has one. */
export const codeOf = (json: unknown): unknown => (json as { error?: { code?: unknown } } | undefined)?.error?.code

/** One invariant: passed when no problem was found; its figures say what was checked. */
export interface Check {
  readonly name: string
  readonly figures: string
  readonly problems: ReadonlyArray<string>
}

export const passed = (check: Check) => check.problems.length === 0

const STARTED = Date.now()

/** Seconds since the command started, for log lines. */
export const clock = (at = Date.now()) => `${((at - STARTED) / 1000).toFixed(1).padStart(6)} s`

export const log = (message: string) => {
  process.stdout.write(`[${clock()}] ${message}\n`)
}

/** PASS or FAIL per check with its figures, and up to `shown` of each failure's problems. */
export const printChecks = (checks: ReadonlyArray<Check>, shown = 12) => {
  for (const check of checks) {
    process.stdout.write(`${passed(check) ? "PASS" : "FAIL"}  ${check.name}: ${check.figures}\n`)
    for (const problem of check.problems.slice(0, shown)) process.stdout.write(`        - ${problem}\n`)
    if (check.problems.length > shown) process.stdout.write(`        - ... and ${check.problems.length - shown} more\n`)
  }
}

/** Counts of values, as `value×n` sorted by count. */
export const tally = (values: Iterable<string | number>): string => {
  const counts = new Map<string | number, number>()
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1)
  return [...counts].sort((a, b) => b[1] - a[1]).map(([value, n]) => `${value}×${n}`).join(" ") || "none"
}

/** A deterministic random source (mulberry32) for the fault schedule, so a seed replays it. */
export const randomFrom = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
