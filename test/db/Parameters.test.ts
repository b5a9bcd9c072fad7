/**
 * The parameters the statements sent at once bind (src/Db/Parameters.ts), as text; that
 * PostgreSQL reads them as node-postgres's own binding is checked against a server in
 * Pipeline.test.ts.
 */
import { describe, expect, it } from "vitest"
import { parameterOf } from "../../src/Db/Parameters.js"

describe("statement parameters", () => {
  it("binds null, text, numbers, booleans and instants as node-postgres does", () => {
    expect(parameterOf(null)).toBeNull()
    expect(parameterOf(undefined)).toBeNull()
    expect(parameterOf("it's \"quoted\" \\ é")).toBe("it's \"quoted\" \\ é")
    expect(parameterOf(-12)).toBe("-12")
    expect(parameterOf(0.1)).toBe("0.1")
    expect(parameterOf(9007199254740993n)).toBe("9007199254740993")
    expect(parameterOf(true)).toBe("true")
    expect(parameterOf(false)).toBe("false")
    expect(parameterOf(new Date(Date.UTC(2026, 11, 2, 10, 11, 12, 5)))).toBe("2026-12-02T10:11:12.005Z")
  })

  it("binds arrays as PostgreSQL's array literal: elements quoted and escaped, NULL, nested, bytea in hex", () => {
    expect(parameterOf([])).toBe("{}")
    expect(parameterOf(["a", "", "NULL", null, undefined, "x\"y", "b\\s", "{,}"])).toBe("{\"a\",\"\",\"NULL\",NULL,NULL,\"x\\\"y\",\"b\\\\s\",\"{,}\"}")
    expect(parameterOf([1, -2.5, null])).toBe("{\"1\",\"-2.5\",NULL}")
    expect(parameterOf([[1, 2], [3, 4]])).toBe("{{\"1\",\"2\"},{\"3\",\"4\"}}")
    expect(parameterOf([true, false])).toBe("{\"true\",\"false\"}")
    expect(parameterOf([new Date(Date.UTC(2026, 0, 1))])).toBe("{\"2026-01-01T00:00:00.000Z\"}")
    expect(parameterOf([Buffer.from([0xde, 0xad]), new Uint8Array([1, 2, 3]).subarray(2)])).toBe("{\\\\xdead,\\\\x03}")
  })

  it("binds bytes as themselves (sent as binary) and plain objects as JSON", () => {
    const bytes = Buffer.from([1, 2])
    expect(parameterOf(bytes)).toBe(bytes)
    expect(parameterOf(new Uint8Array([5, 6, 7]).subarray(1))).toEqual(Buffer.from([6, 7]))
    expect(parameterOf({ a: [1, "é", null], b: { c: true } })).toBe("{\"a\":[1,\"é\",null],\"b\":{\"c\":true}}")
    expect(parameterOf(Object.assign(Object.create(null), { n: 1 }))).toBe("{\"n\":1}")
  })

  it("refuses any other kind", () => {
    for (const value of [Symbol("s"), () => 1, new Map(), new (class Money {})(), new Set([1])]) {
      expect(() => parameterOf(value)).toThrow(TypeError)
    }
    expect(() => parameterOf([1, Symbol("in an array")])).toThrow(TypeError)
    expect(() => parameterOf(new Date(Number.NaN))).toThrow(RangeError)
  })
})
