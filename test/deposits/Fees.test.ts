/** Deposit commission tiers of src/Deposits/Fees.ts (spec 2.5, CONTRACT 6). */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { FEE_TIERS, settle, tierFor } from "../../src/Deposits/Fees.js"
import { toUnits } from "../../src/Domain/Money.js"

const micros = (usdt: number): bigint => {
  const units = toUnits(usdt, 6)
  if (units === undefined) throw new Error(`${usdt} has more than 6 decimals`)
  return units
}

const settled = (usdt: number) => {
  const s = settle(micros(usdt))
  return { basisPoints: s.basisPoints, commission: Number(s.commissionCents) / 100, credited: Number(s.creditedCents) / 100 }
}

describe("fee tiers", () => {
  it("are 1 % below 5000 and 0.5 % from 5000 up (spec 2.5)", () => {
    expect(FEE_TIERS).toEqual([
      { minUsd: 0, maxUsd: 5000, basisPoints: 100 },
      { minUsd: 5000, maxUsd: null, basisPoints: 50 }
    ])
  })

  it("are chosen by the amount sent, min inclusive and max exclusive", () => {
    expect(tierFor(1n).basisPoints).toBe(100)
    expect(tierFor(micros(4999.99)).basisPoints).toBe(100)
    expect(tierFor(micros(4999.999999)).basisPoints).toBe(100)
    expect(tierFor(micros(5000)).basisPoints).toBe(50)
    expect(tierFor(micros(5000.000001)).basisPoints).toBe(50)
    expect(tierFor(micros(1e9)).basisPoints).toBe(50)
  })
})

describe("settle", () => {
  it("102.50 sent: commission 1.03 (1.025 rounded half-up), credited 101.47", () => {
    expect(settled(102.5)).toEqual({ basisPoints: 100, commission: 1.03, credited: 101.47 })
  })

  it("6435 sent: 0.5 % tier, commission 32.18 (32.175 rounded half-up), credited 6402.82", () => {
    expect(settled(6435)).toEqual({ basisPoints: 50, commission: 32.18, credited: 6402.82 })
  })

  it("4999.99 sent: 1 % tier, commission 50.00 (49.9999 rounded), credited 4949.99", () => {
    expect(settled(4999.99)).toEqual({ basisPoints: 100, commission: 50, credited: 4949.99 })
  })

  it("exactly 5000 sent: 0.5 % tier, commission 25.00, credited 4975.00", () => {
    expect(settled(5000)).toEqual({ basisPoints: 50, commission: 25, credited: 4975 })
  })

  it("more examples at the edges", () => {
    expect(settled(1010.1)).toEqual({ basisPoints: 100, commission: 10.1, credited: 1000 }) // the demo funding
    expect(settled(0.5)).toEqual({ basisPoints: 100, commission: 0.01, credited: 0.49 }) // 0.005 rounds up
    expect(settled(0.49)).toEqual({ basisPoints: 100, commission: 0, credited: 0.49 }) // 0.0049 rounds down
    expect(settled(0.01)).toEqual({ basisPoints: 100, commission: 0, credited: 0.01 })
    // a fraction of a cent sent is not credited
    expect(settled(102.505)).toEqual({ basisPoints: 100, commission: 1.03, credited: 101.47 })
    expect(settled(5000.000001)).toEqual({ basisPoints: 50, commission: 25, credited: 4975 })
  })

  const sentMicros = fc.oneof(
    fc.bigInt({ min: 1n, max: 10n ** 13n }), // up to 10 million USDT, any micro
    fc.bigInt({ min: 4_990_000_000n, max: 5_010_000_000n }), // around the tier boundary
    fc.integer({ min: 1, max: 100_000_000 }).map((cents) => BigInt(cents) * 10_000n) // whole cents
  )

  it("property: credited + commission <= sent, short of it by less than a cent", () => {
    fc.assert(
      fc.property(sentMicros, (sent) => {
        const s = settle(sent)
        const paidOut = (s.creditedCents + s.commissionCents) * 10_000n
        expect(paidOut <= sent).toBe(true)
        expect(sent - paidOut < 10_000n).toBe(true)
        expect(s.commissionCents >= 0n).toBe(true)
      }),
      { numRuns: 5000 }
    )
  })

  it("property: the commission is within half a cent of the tier's exact percentage, ties rounded up", () => {
    fc.assert(
      fc.property(sentMicros, (sent) => {
        const s = settle(sent)
        expect(s.basisPoints).toBe(sent >= 5_000_000_000n ? 50 : 100)
        // exact commission in cents = sent * bp / 10^8
        const diff = s.commissionCents * 100_000_000n - sent * BigInt(s.basisPoints)
        expect(diff > -50_000_000n && diff <= 50_000_000n).toBe(true)
      }),
      { numRuns: 5000 }
    )
  })

  it("property: sending more never credits less", () => {
    fc.assert(
      fc.property(sentMicros, fc.bigInt({ min: 1n, max: 10n ** 9n }), (sent, extra) => {
        expect(settle(sent + extra).creditedCents >= settle(sent).creditedCents).toBe(true)
      }),
      { numRuns: 5000 }
    )
  })
})
