/**
 * Token buckets in memory: per merchant for API requests, per client address for failed
 * authentications. Time comes from Effect's Clock, so tests drive refill with TestClock.
 * Buckets are per process: N processes allow N times the budget (documented in the README).
 */
import { Clock, Effect } from "effect"

export interface BucketDecision {
  readonly allowed: boolean
  /** Capacity of the bucket: the burst window's limit. */
  readonly limit: number
  /** Whole tokens left after this request. */
  readonly remaining: number
  /** Seconds until one token is back (only meaningful when not allowed); at least 1. */
  readonly retryAfterSeconds: number
}

interface Bucket {
  tokens: number
  updatedAt: number
}

const SWEEP_AT = 50_000

export const makeTokenBuckets = (ratePerSecond: number, capacity: number) => {
  const buckets = new Map<string, Bucket>()

  const refill = (bucket: Bucket, now: number) => {
    const elapsed = Math.max(0, now - bucket.updatedAt) / 1000
    bucket.tokens = Math.min(capacity, bucket.tokens + elapsed * ratePerSecond)
    bucket.updatedAt = now
  }

  // Full buckets carry no information: drop them when the map grows.
  const sweep = (now: number) => {
    for (const [key, bucket] of buckets) {
      refill(bucket, now)
      if (bucket.tokens >= capacity) buckets.delete(key)
    }
  }

  const retryAfter = (tokens: number) => ratePerSecond > 0 ? Math.max(1, Math.ceil((1 - tokens) / ratePerSecond)) : 3600

  const decide = (key: string, cost: number, now: number): BucketDecision => {
    let bucket = buckets.get(key)
    if (bucket === undefined) {
      if (buckets.size >= SWEEP_AT) sweep(now)
      bucket = { tokens: capacity, updatedAt: now }
      buckets.set(key, bucket)
    } else {
      refill(bucket, now)
    }
    if (bucket.tokens >= cost) {
      bucket.tokens -= cost
      return { allowed: true, limit: capacity, remaining: Math.floor(bucket.tokens), retryAfterSeconds: 0 }
    }
    return { allowed: false, limit: capacity, remaining: 0, retryAfterSeconds: retryAfter(bucket.tokens) }
  }

  /** Takes one token from `key`'s bucket if there is one, at time `now` (ms). */
  const takeAt = (key: string, now: number) => decide(key, 1, now)

  /** Whether `key` has a token at time `now` (ms), without taking it. */
  const peekAt = (key: string, now: number): BucketDecision => {
    const d = decide(key, 0, now)
    return d.remaining >= 1 ? { ...d, allowed: true } : { ...d, allowed: false, retryAfterSeconds: retryAfter(d.remaining) }
  }

  /** Puts back a token taken from `key`'s bucket for a request that is then answered elsewhere. */
  const giveBack = (key: string) => {
    const bucket = buckets.get(key)
    if (bucket !== undefined) bucket.tokens = Math.min(capacity, bucket.tokens + 1)
  }

  const take = (key: string) => Effect.map(Clock.currentTimeMillis, (now) => takeAt(key, now))
  const peek = (key: string) => Effect.map(Clock.currentTimeMillis, (now) => peekAt(key, now))

  return { take, peek, takeAt, peekAt, giveBack } as const
}

export type TokenBuckets = ReturnType<typeof makeTokenBuckets>
