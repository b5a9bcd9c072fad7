/**
 * fast-check arbitraries of the values a JSON schema allows and of values meant to break it: wrong
 * JSON types, numbers just past and far past each bound, strings with one character dropped, added
 * or replaced, junk strings, strings too long. Real values seen on the service (item ids, names,
 * prices, cursors) are mixed in by field name, so valid requests reach real items and purchases.
 */
import * as fc from "fast-check"

/** Strings that break many a parameter: empty, blank, not a number, numbers written oddly, JSON, NUL, emoji, too long. */
export const JUNK_STRINGS = [
  "",
  " ",
  "abc",
  "-1",
  "1e999",
  "NaN",
  "Infinity",
  "0x10",
  " 1",
  "1,5",
  "１",
  "null",
  "true",
  "[]",
  "{}",
  "%00",
  "\u0000",
  "😀",
  "a".repeat(300)
]

export const stringArb = (minLength: number, maxLength: number) =>
  fc.oneof(
    fc.string({ unit: "grapheme-ascii", minLength, maxLength }),
    fc.string({ unit: "grapheme", minLength, maxLength })
  )

const dateTimeArb = fc.date({ min: new Date("1990-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }).chain((d) => {
  const iso = d.toISOString()
  const shifted = new Date(d.getTime() + 330 * 60_000).toISOString().slice(0, 19)
  return fc.constantFrom(iso, `${iso.slice(0, 19)}Z`, `${shifted}+05:30`)
})

/** Real values the generators mix in, by field or parameter name. */
export interface Hints {
  readonly byName: Record<string, ReadonlyArray<unknown>>
}

/** The arbitraries of one document's schemas (`deref` follows its $refs) with the real values of `hints`. */
export class SchemaValues {
  constructor(private readonly deref: (schema: any) => any, readonly hints: Hints) {}

  /** Valid values of a schema (then filtered by our validator: what the schema says is the judge). */
  valid(schema: any, name: string): fc.Arbitrary<unknown> {
    const generic = this.generic(this.deref(schema))
    const real = this.hints.byName[name]
    return real !== undefined && real.length > 0 ? fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...real) }, { weight: 1, arbitrary: generic }) : generic
  }

  /** Valid values of a schema whose $ref is followed, with no real values mixed in at its top. */
  generic(s: any): fc.Arbitrary<unknown> {
    if (s === undefined || s === true) return fc.jsonValue({ maxDepth: 1 })
    if (s.const !== undefined) return fc.constant(s.const)
    if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum)
    const branches = s.anyOf ?? s.oneOf
    if (Array.isArray(branches)) return fc.oneof(...branches.map((b: any) => this.generic(this.deref(b))))
    const type = Array.isArray(s.type) ? s.type : [s.type]
    if (type.length > 1) return fc.oneof(...type.map((t: string) => this.generic({ ...s, type: t })))
    switch (type[0]) {
      case "string": {
        if (s.format === "uuid") return fc.uuid().chain((u) => fc.constantFrom(u, u.toUpperCase()))
        if (s.format === "date-time") return dateTimeArb
        if (typeof s.pattern === "string") return fc.stringMatching(new RegExp(s.pattern, "u"))
        return stringArb(s.minLength ?? 0, Math.min(s.maxLength ?? 30, 300))
      }
      case "integer": {
        const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? Math.floor(s.exclusiveMinimum) + 1 : -1_000_000)
        const max = s.maximum ?? (s.exclusiveMaximum !== undefined ? Math.ceil(s.exclusiveMaximum) - 1 : 1_000_000)
        return fc.integer({ min, max })
      }
      case "number": {
        const min = s.minimum ?? s.exclusiveMinimum ?? -1_000_000
        const max = s.maximum ?? s.exclusiveMaximum ?? 1_000_000
        return fc.oneof(
          fc.double({
            min,
            max,
            noNaN: true,
            noDefaultInfinity: true,
            minExcluded: s.exclusiveMinimum !== undefined,
            maxExcluded: s.exclusiveMaximum !== undefined
          }),
          fc.integer({ min: Math.ceil(min * 100), max: Math.floor(max * 100) }).map((cents) => cents / 100)
        )
      }
      case "boolean":
        return fc.boolean()
      case "null":
        return fc.constant(null)
      case "array":
        return fc.array(this.valid(s.items, ""), { maxLength: 3 })
      case "object": {
        const properties: Record<string, fc.Arbitrary<unknown>> = {}
        for (const [key, sub] of Object.entries(s.properties ?? {})) properties[key] = this.valid(sub, key)
        return fc.record(properties, { requiredKeys: s.required ?? [] })
      }
      default:
        return fc.jsonValue({ maxDepth: 1 })
    }
  }

  /** Values meant to break a schema (filtered by our validator: only those it refuses are kept). */
  invalid(schema: any, validator: (v: unknown) => boolean): fc.Arbitrary<unknown> {
    const s = this.deref(schema) ?? {}
    const candidates: Array<fc.Arbitrary<unknown>> = [
      // another JSON type
      fc.oneof(
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.boolean(),
        fc.constant(null),
        stringArb(0, 12),
        fc.array(fc.integer(), { maxLength: 2 }),
        fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 })
      )
    ]
    const bounds = [s.minimum, s.maximum, s.exclusiveMinimum, s.exclusiveMaximum].filter((b) => typeof b === "number")
    if (bounds.length > 0 || s.type === "number" || s.type === "integer") {
      // out of range: just past each bound, far past it, the excluded bound itself, a fraction for an integer
      candidates.push(fc.constantFrom(...bounds.flatMap((b) => [b - 1, b + 1, b - 0.001, b + 0.001, b, b - 1e9, b + 1e9]), -1, 0, 0.5, -0.01, 1e308, -1e308))
    }
    const valid = this.generic(s)
    if (s.type === "string" || s.pattern !== undefined || s.enum !== undefined || s.format !== undefined || s.anyOf !== undefined) {
      // a valid string with one character dropped, added or replaced, its case changed, padded, cut, or far too long
      candidates.push(
        fc.tuple(valid, fc.nat(), fc.constantFrom("!", "g", " ", "-", "0", "é", "\u0000", "/")).map(([v, i, c]) => {
          const text = typeof v === "string" ? v : JSON.stringify(v)
          const k = text.length === 0 ? 0 : i % text.length
          return [
            text.slice(0, k) + text.slice(k + 1),
            text.slice(0, k) + c + text.slice(k),
            text.slice(0, k) + c + text.slice(k + 1),
            text.toUpperCase(),
            text.toLowerCase(),
            ` ${text}`,
            text.slice(0, k)
          ][i % 7]
        }),
        fc.constantFrom(...JUNK_STRINGS),
        stringArb(0, 40)
      )
      if (typeof s.maxLength === "number") candidates.push(fc.integer({ min: s.maxLength + 1, max: s.maxLength + 40 }).map((n) => "x".repeat(n)))
    }
    return fc.oneof(...candidates).filter((v) => !validator(v))
  }
}
