import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { isSteamId64, numberRangePattern, parseTradeUrl } from "../../src/Domain/TradeUrl.js"

const BASE = 76561197960265728n
const MAX_ACCOUNT = 4294967295n

describe("trade URLs and SteamID64 (CONTRACT 5.1)", () => {
  it("derives, for every account id 1 to 4294967295, a SteamID64 that isSteamId64 accepts", () => {
    fc.assert(fc.property(fc.bigInt({ min: 1n, max: MAX_ACCOUNT }), (partner) => {
      const parsed = parseTradeUrl(`https://steamcommunity.com/tradeoffer/new/?partner=${partner}&token=abcdEFGH`)
      return parsed !== undefined && parsed.steamId === String(BASE + partner) && isSteamId64(parsed.steamId)
    }))
    // the top of the range, where the SteamID64 no longer starts with 7656119
    expect(parseTradeUrl(`https://steamcommunity.com/tradeoffer/new/?partner=${MAX_ACCOUNT}&token=abcdEFGH`)?.steamId).toBe("76561202255233023")
    expect(isSteamId64("76561202255233023")).toBe(true)
    expect(isSteamId64("76561200000000000")).toBe(true)
  })

  it("refuses SteamID64s outside the account range and anything but 17 digits", () => {
    for (const s of ["76561197960265728", "76561202255233024", "76561199999999999x", "7656119796026573", "065611979602657290", "", "7656119796026572a"]) {
      expect([s, isSteamId64(s)]).toEqual([s, false])
    }
    expect(parseTradeUrl(`https://steamcommunity.com/tradeoffer/new/?partner=${MAX_ACCOUNT + 1n}&token=abcdEFGH`)).toBeUndefined()
    expect(parseTradeUrl("https://steamcommunity.com/tradeoffer/new/?partner=0&token=abcdEFGH")).toBeUndefined()
  })

  it("numberRangePattern matches exactly the numbers of its range, so the document states the same rule", () => {
    const written = fc.oneof(fc.bigInt({ min: 0n, max: 10n ** 12n }).map(String), fc.stringMatching(/^\d{1,13}$/))
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 10n ** 12n }), written, (lo, span, text) => {
        const hi = lo + span
        const inRange = !/^0/.test(text) && BigInt(text) >= lo && BigInt(text) <= hi
        return new RegExp(`^${numberRangePattern(lo, hi)}$`).test(text) === inRange
      }),
      { numRuns: 2_000 }
    )
    // found by the property above: a range of one length whose low end is a power of ten
    expect(new RegExp(`^${numberRangePattern(10n ** 12n, 10n ** 12n)}$`).test("1000000000000")).toBe(true)
    // the edges of the SteamID64 range, and every number of digits around them
    for (const edge of [BASE, BASE + 1n, BASE + MAX_ACCOUNT, BASE + MAX_ACCOUNT + 1n]) {
      for (const n of [edge - 1n, edge, edge + 1n]) expect([String(n), isSteamId64(String(n))]).toEqual([String(n), n > BASE && n <= BASE + MAX_ACCOUNT])
    }
  })
})
