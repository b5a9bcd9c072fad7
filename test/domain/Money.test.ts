/** Exact money of src/Domain/Money.ts: decimals as written, exact comparisons, units, half-up percentages. */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { compareCents, decimalOf, exactForCents, MICROS_PER_CENT, percentOfMicrosInCents, topLevelNumberText, toUnits, usd } from "../../src/Domain/Money.js"

describe("decimalOf", () => {
  it("reads a number as the decimal it was written as", () => {
    expect(decimalOf(0)).toEqual({ digits: 0n, scale: 0 })
    expect(decimalOf(100)).toEqual({ digits: 100n, scale: 0 })
    expect(decimalOf(0.1)).toEqual({ digits: 1n, scale: 1 })
    expect(decimalOf(102.5)).toEqual({ digits: 1025n, scale: 1 })
    expect(decimalOf(10.005)).toEqual({ digits: 10005n, scale: 3 })
    expect(decimalOf(-2.5)).toEqual({ digits: -25n, scale: 1 })
    expect(decimalOf(-0)).toEqual({ digits: 0n, scale: 0 })
  })

  it("handles exponent notation both ways", () => {
    expect(decimalOf(1e-7)).toEqual({ digits: 1n, scale: 7 })
    expect(decimalOf(1.5e-10)).toEqual({ digits: 15n, scale: 11 })
    expect(decimalOf(-1e-7)).toEqual({ digits: -1n, scale: 7 })
    expect(decimalOf(1e21)).toEqual({ digits: 10n ** 21n, scale: 0 })
    expect(decimalOf(1.25e22)).toEqual({ digits: 125n * 10n ** 20n, scale: 0 })
  })

  it("refuses non-finite numbers", () => {
    expect(() => decimalOf(Number.NaN)).toThrow(RangeError)
    expect(() => decimalOf(Number.POSITIVE_INFINITY)).toThrow(RangeError)
    expect(() => decimalOf(Number.NEGATIVE_INFINITY)).toThrow(RangeError)
  })

  it("property: the decimal reads back as the same number", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
        const { digits, scale } = decimalOf(n)
        expect(scale).toBeGreaterThanOrEqual(0)
        expect(Number(`${digits}e-${scale}`)).toBe(n === 0 ? 0 : n)
      }),
      { numRuns: 2000 }
    )
  })
})

describe("compareCents", () => {
  it("compares exactly where binary floats would lie", () => {
    expect(compareCents(1000, 10.005)).toBe(-1) // 10.00 < 10.005
    expect(compareCents(1001, 10.005)).toBe(1) // 10.01 > 10.005
    expect(compareCents(1000, 10)).toBe(0)
    expect(compareCents(1000, 9.999999999)).toBe(1)
    expect(compareCents(29, 0.29)).toBe(0) // 0.29 * 100 is 28.999999999999996 in floats
    expect(compareCents(1, 0.01)).toBe(0)
    expect(compareCents(1, 0.1 * 0.1)).toBe(-1) // 0.010000000000000002
    expect(compareCents(0, 1e-7)).toBe(-1)
    expect(compareCents(1, 1e-7)).toBe(1)
    expect(compareCents(0, 0)).toBe(0)
    expect(compareCents(-1, 0)).toBe(-1)
    expect(compareCents(100_000_000_000, 1e9)).toBe(0)
    expect(compareCents(0, 1e21)).toBe(-1)
  })

  it("property: cents equal their own USD value and differ from their neighbours", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e13, max: 1e13 }), (cents) => {
        const value = cents / 100
        expect(compareCents(cents, value)).toBe(0)
        expect(compareCents(cents - 1, value)).toBe(-1)
        expect(compareCents(cents + 1, value)).toBe(1)
      }),
      { numRuns: 2000 }
    )
  })
})

describe("toUnits", () => {
  it("converts numbers with at most `places` decimals", () => {
    expect(toUnits(10.1, 2)).toBe(1010n)
    expect(toUnits(100, 2)).toBe(10000n)
    expect(toUnits(4999.99, 6)).toBe(4_999_990_000n)
    expect(toUnits(1e-6, 6)).toBe(1n)
    expect(toUnits(0.000001, 6)).toBe(1n)
    expect(toUnits(-1.5, 2)).toBe(-150n)
    expect(toUnits(1e21, 2)).toBe(10n ** 23n)
    expect(toUnits(0, 6)).toBe(0n)
  })

  it("refuses numbers with more decimals than `places`", () => {
    expect(toUnits(1.005, 2)).toBeUndefined()
    expect(toUnits(1e-7, 6)).toBeUndefined()
    expect(toUnits(1.0000001, 6)).toBeUndefined()
    expect(toUnits(0.1 + 0.2, 2)).toBeUndefined() // 0.30000000000000004, not silently 30
  })

  it("property: integer units divided back give the same number", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e12, max: 1e12 }), fc.integer({ min: 0, max: 6 }), (units, places) => {
        const n = units / 10 ** places
        expect(toUnits(n, places)).toBe(BigInt(units))
      }),
      { numRuns: 2000 }
    )
  })
})

describe("usd", () => {
  it("renders cents as a JSON number of USD", () => {
    expect(usd(10147)).toBe(101.47)
    expect(usd(10147n)).toBe(101.47)
    expect(usd(0)).toBe(0)
    expect(JSON.stringify(usd(640282))).toBe("6402.82")
    expect(JSON.stringify(usd(1))).toBe("0.01")
  })
})

describe("percentOfMicrosInCents", () => {
  it("rounds half-up to the cent", () => {
    // 1 % of 0.5 USDT is 0.5 cent: up to 1 cent; just below is 0.
    expect(percentOfMicrosInCents(500_000n, 100)).toBe(1n)
    expect(percentOfMicrosInCents(499_999n, 100)).toBe(0n)
    // 0.5 % of 643.5 USDT is 3.2175 USD
    expect(percentOfMicrosInCents(643_500_000n, 50)).toBe(322n)
    expect(percentOfMicrosInCents(0n, 100)).toBe(0n)
  })

  it("property: within half a cent of the exact percentage, ties rounded up", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), fc.integer({ min: 0, max: 10_000 }), (micros, bp) => {
        const cents = percentOfMicrosInCents(micros, bp)
        // exact = micros * bp / 10^8 cents; compare scaled by 10^8
        const diff = cents * 100_000_000n - micros * BigInt(bp)
        expect(diff > -50_000_000n && diff <= 50_000_000n).toBe(true)
      }),
      { numRuns: 2000 }
    )
  })

  it("has 10^4 micros in a cent", () => {
    expect(MICROS_PER_CENT).toBe(10_000n)
  })
})

describe("a money field exactly as the client wrote it (CONTRACT 6: max_price compared exactly)", () => {
  it("finds the literal of a top-level key, as JSON.parse would keep it", () => {
    expect(topLevelNumberText(`{"item_id":"x","max_price":9.99999999999999999999}`, "max_price")).toBe("9.99999999999999999999")
    expect(topLevelNumberText(` { "max_price" : 1e-3 , "a":1}`, "max_price")).toBe("1e-3")
    // escaped key, nested lookalikes, strings holding lookalikes, the last duplicate wins
    expect(topLevelNumberText(`{"max\\u005fprice":2.5}`, "max_price")).toBe("2.5")
    expect(topLevelNumberText(`{"o":{"max_price":1},"s":"\\"max_price\\":3","max_price":4,"l":[{"max_price":5}]}`, "max_price")).toBe("4")
    expect(topLevelNumberText(`{"max_price":1,"max_price":7.25}`, "max_price")).toBe("7.25")
    expect(topLevelNumberText(`{"max_price":"5"}`, "max_price")).toBeUndefined()
    expect(topLevelNumberText(`{"price":5}`, "max_price")).toBeUndefined()
    expect(topLevelNumberText(`[{"max_price":5}]`, "max_price")).toBeUndefined()
  })

  it("keeps a number JSON.parse read exactly, and replaces one it rounded", () => {
    expect(exactForCents(9.99, "9.99")).toBe(9.99)
    expect(exactForCents(10, "10.000")).toBe(10)
    expect(exactForCents(10, undefined)).toBe(10)
    const nines = "9.99999999999999999999"
    expect(JSON.parse(nines)).toBe(10)
    expect(compareCents(1000, exactForCents(10, nines))).toBe(1) // 10.00 is above 9.999…
    expect(compareCents(999, exactForCents(10, nines))).toBe(-1)
    expect(compareCents(1000, exactForCents(10, "10.00000000000000000001"))).toBe(-1)
  })

  it("compares literals of any length or exponent exactly, and says when one is not above 0", () => {
    const below10 = "9." + "9".repeat(450)
    expect(JSON.parse(below10)).toBe(10)
    expect(compareCents(1000, exactForCents(10, below10))).toBe(1)
    expect(compareCents(999, exactForCents(10, below10))).toBe(-1)
    const above10 = "10." + "0".repeat(500) + "1"
    expect(compareCents(1000, exactForCents(10, above10))).toBe(-1)
    expect(compareCents(1001, exactForCents(10, above10))).toBe(1)
    expect(exactForCents(10, "1" + "0".repeat(499) + "e-498")).toBe(10)
    // positive, though JSON.parse reads 0: below every price, yet above 0
    expect(exactForCents(0, "1e-400")).toBe(0.005)
    expect(compareCents(1, exactForCents(0, "1e-400"))).toBe(1)
    // beyond the doubles (Infinity) or any price: above every price, and finite
    expect(exactForCents(Infinity, "1e400")).toBe(1e9)
    expect(exactForCents(1e300, "1e300")).toBe(1e9)
    expect(exactForCents(Infinity, "1e99999999999999999999")).toBe(1e9)
    expect(exactForCents(0, "1e-99999999999999999999")).toBe(0.005)
    // zero and negatives stay not above 0
    for (const zero of ["0", "-0", "0.000", "0e7", "-0.0e-3"]) expect(exactForCents(0, zero)).toBe(0)
    for (const negative of ["-1", "-1e-400", "-0.001"]) expect(exactForCents(-0, negative)).toBeLessThan(0)
    // a megabyte of digits (a body's limit) is read as text
    expect(exactForCents(0, "0." + "0".repeat(1_000_000) + "1")).toBe(0.005)
    expect(exactForCents(1, "0." + "9".repeat(1_000_000))).toBe(0.995)
  })

  /** The oracle: a literal's exact decimal, with BigInt. */
  const exactDecimal = (text: string) => {
    const [, whole, fraction = "", exponent = "0"] = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(text)!
    const scale = fraction.length - Number(exponent)
    return scale >= 0
      ? { digits: BigInt(whole + fraction), scale }
      : { digits: BigInt(whole + fraction) * 10n ** BigInt(-scale), scale: 0 }
  }

  it("property: compares with whole cents exactly as the written decimal does", () => {
    const literal = fc.tuple(fc.integer({ min: 0, max: 100_000 }), fc.stringMatching(/^[0-9]{1,30}$/), fc.integer({ min: -40, max: 6 }))
      .map(([whole, fraction, exponent]) => exponent === 0 ? `${whole}.${fraction}` : `${whole}.${fraction}e${exponent}`)
      .filter((text) => /[1-9]/.test(text.split("e")[0]!))
    fc.assert(
      fc.property(literal, fc.integer({ min: 0, max: 10_000_001 }), (text, cents) => {
        const written = exactDecimal(text)
        const left = BigInt(cents) * 10n ** BigInt(written.scale)
        const right = written.digits * 100n
        const exact = left < right ? -1 : left > right ? 1 : 0
        const value = exactForCents(JSON.parse(text) as number, text)
        expect(value).toBeGreaterThan(0)
        expect(compareCents(cents, value)).toBe(exact)
      }),
      { numRuns: 5000 }
    )
  })
})
