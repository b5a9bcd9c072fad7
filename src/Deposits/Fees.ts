/**
 * Deposit commission tiers (spec 2.5): chosen by the amount sent, `min_amount` inclusive;
 * the commission is rounded half-up to the cent (CONTRACT 6).
 */
import { MICROS_PER_CENT, percentOfMicrosInCents } from "../Domain/Money.js"

export interface FeeTier {
  /** Inclusive lower bound, whole USD. */
  readonly minUsd: number
  /** Exclusive upper bound, whole USD; null is unbounded. */
  readonly maxUsd: number | null
  /** 100 basis points = 1 percent. */
  readonly basisPoints: number
}

export const FEE_TIERS: ReadonlyArray<FeeTier> = [
  { minUsd: 0, maxUsd: 5000, basisPoints: 100 },
  { minUsd: 5000, maxUsd: null, basisPoints: 50 }
]

const MICROS_PER_USD = 1_000_000n

export const tierFor = (sentMicros: bigint): FeeTier =>
  FEE_TIERS.find((t) => sentMicros >= BigInt(t.minUsd) * MICROS_PER_USD && (t.maxUsd === null || sentMicros < BigInt(t.maxUsd) * MICROS_PER_USD)) ??
    FEE_TIERS[FEE_TIERS.length - 1]!

export interface DepositSettlement {
  readonly basisPoints: number
  readonly commissionCents: bigint
  /** Sent minus commission, in whole cents; a fraction of a cent sent is not credited. */
  readonly creditedCents: bigint
}

export const settle = (sentMicros: bigint): DepositSettlement => {
  const { basisPoints } = tierFor(sentMicros)
  const commissionCents = percentOfMicrosInCents(sentMicros, basisPoints)
  const sentCents = sentMicros / MICROS_PER_CENT
  return { basisPoints, commissionCents, creditedCents: sentCents - commissionCents }
}
