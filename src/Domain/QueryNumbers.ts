/**
 * Numbers in a query string, read strictly: an integer in decimal digits, a decimal as a JSON
 * number without a sign (JavaScript writes small floats with an exponent: 1e-7). Number() would
 * also read `0x10`, `+5`, ` 10 ` or `.5`, so a typo could silently become another page size or
 * bound.
 */
import { Schema } from "effect"
import { exactForCents } from "./Money.js"

/**
 * An integer written in decimal digits, as many as written (a value past its bounds fails on its
 * bounds, not as "not an integer").
 */
export const IntegerText = Schema.compose(
  Schema.String.pipe(Schema.pattern(/^\d+$/, { message: () => "expected an integer in decimal digits" })),
  Schema.NumberFromString
)

/**
 * A non-negative JSON number: digits, an optional fraction and exponent; no sign, hex or spaces.
 * No count of digits is refused: 10000000000000000 is the same value as 1e16, and both are read
 * (a request line is bounded by node's header limit anyway).
 */
const NON_NEGATIVE_JSON_NUMBER = /^\d+(\.\d+)?([eE][+-]?\d+)?$/

const nonNegativeNumberText = (example: string) =>
  Schema.String.pipe(Schema.pattern(NON_NEGATIVE_JSON_NUMBER, { message: () => `expected a non-negative number such as ${example}` }))

/** A non-negative decimal (a float bound). */
export const DecimalText = Schema.compose(nonNegativeNumberText("0.25"), Schema.NumberFromString).pipe(Schema.finite())
  .annotations({ jsonSchema: { type: "number", minimum: 0 } })

/**
 * A USD amount as a bound on prices, compared with whole cents exactly as written: 0.0100000001
 * is above 0.01, though its nearest double is not (Money.ts `exactForCents`). A bound past the
 * doubles' range (1e400) is an invalid filter.
 */
export const UsdText = Schema.transform(
  nonNegativeNumberText("12.50"),
  Schema.Number,
  {
    strict: true,
    decode: (text) => {
      const read = Number(text)
      return Number.isFinite(read) ? exactForCents(read, text) : read
    },
    encode: String
  }
).pipe(Schema.finite()).annotations({
  description: "USD, 0 or more; compared with prices exactly as written",
  jsonSchema: { type: "number", minimum: 0 }
})
