import { Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { isCalendarDateTime, StorableString, unstorablePath } from "../../src/Domain/Db.js"

describe("isCalendarDateTime", () => {
  it("accepts every instant from year 1 to 9999 as toISOString writes it", () => {
    fc.assert(fc.property(
      fc.date({ min: new Date("0001-01-01T00:00:00.000Z"), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true }),
      (date) => isCalendarDateTime(date.toISOString())
    ))
  })

  it("refuses a date the calendar does not have, or an instant outside years 1 to 9999", () => {
    for (
      const s of [
        "0000-01-01T00:00:00Z",
        "2026-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-00-10T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T12:60:00Z",
        "2026-01-01T12:00:60Z",
        "0001-01-01T00:30:00+01:00",
        "2026-01-01",
        "yesterday",
        ""
      ]
    ) expect([s, isCalendarDateTime(s)]).toEqual([s, false])
    for (const s of ["2028-02-29T00:00:00Z", "2026-01-01T00:00Z", "2026-06-30T23:59:59.999999Z", "2026-01-01T00:00:00+14:00"]) {
      expect([s, isCalendarDateTime(s)]).toEqual([s, true])
    }
  })
})

describe("unstorablePath", () => {
  it("finds the first string holding U+0000 or a lone surrogate, deep in objects and arrays", () => {
    expect(unstorablePath({ a: "x", b: [{ c: "ok" }, { d: "n\u0000" }] })?.path).toEqual(["b", 1, "d"])
    expect(unstorablePath("\u0000")).toEqual({ path: [], problem: "must not contain the NUL character (U+0000)" })
    expect(unstorablePath({ a: ["ok", "x\ud800y"] })).toEqual({ path: ["a", 1], problem: "must not contain a lone surrogate (invalid Unicode)" })
    expect(unstorablePath({ a: "\udfff" })?.path).toEqual(["a"])
    expect(unstorablePath({ a: "x", b: [1, null, true, { c: "ok", d: "caf\u00e9 \ud83d\ude00" }] })).toBeUndefined()
  })
})

describe("StorableString", () => {
  it("refuses U+0000 and lone surrogates, and keeps every other string, astral characters included", () => {
    const valid = Schema.is(StorableString)
    for (const s of ["\u0000", "a\ud800", "\udc00b", "\ud83d"]) expect([s, valid(s)]).toEqual([s, false])
    fc.assert(fc.property(fc.string({ unit: "grapheme" }), (s) => valid(s) === !s.includes("\u0000")))
  })
})
