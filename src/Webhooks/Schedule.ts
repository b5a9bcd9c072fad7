/**
 * The arithmetic of webhook delivery: when an attempt is due by the retry schedule, and how far
 * ahead of its attempts a process may hold a merchant's events under a lease of at most 120 s.
 */

const MAX_LEASE_SECONDS = 120
/**
 * Events held per merchant (and per process), as a multiple of the attempts allowed in flight: the
 * next ones are at hand when an attempt ends, without a claim's round trip in between. At most 8;
 * fewer when the attempts are long, so that the lease covers them all (`holding`).
 */
const MAX_HOLD_FACTOR = 8
/** An event held this close to its lease's end is given back unattempted (another claim takes it). */
export const LEASE_MARGIN_MS = 2_000

/**
 * How many rounds of attempts a merchant's held events make (`factor`), and the lease: long enough
 * for an event held behind the others (each round up to the timeout) and the recording of its
 * result, at most 120 s (spec 3.3). Config.ts keeps the timeout under the longest lease.
 */
export const holding = (timeoutSeconds: number) => {
  const factor = Math.max(1, Math.min(MAX_HOLD_FACTOR, Math.floor((MAX_LEASE_SECONDS - 5) / timeoutSeconds) - 1))
  return { factor, leaseSeconds: Math.min(MAX_LEASE_SECONDS, Math.ceil((factor + 1) * timeoutSeconds + 5)) }
}

/** When the attempt after `attemptsInRun` attempts is due, or null when the schedule is exhausted. */
export const nextAttemptAt = (schedule: ReadonlyArray<number>, attemptsInRun: number, after: Date): Date | null => {
  const delay = schedule[attemptsInRun]
  return delay === undefined ? null : new Date(after.getTime() + delay * 1000)
}
