/**
 * Exact money. Amounts are integer cents from the request's parse to the SQL column; JSON numbers
 * that arrive from clients are read back as the decimal text they were written as (the shortest
 * round-trip form), never multiplied as binary floats.
 */

/** A JSON number as an exact decimal: value = digits / 10^scale. */
export interface Decimal {
  readonly digits: bigint
  readonly scale: number
}

/** Decimal number text (a JSON number literal) as an exact decimal; undefined if it is not one. */
const parseDecimal = (text: string): Decimal | undefined => {
  const match = text.match(/^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/)
  if (!match) return undefined
  const [, sign, whole, fraction = "", exponentText = "0"] = match
  let digits = BigInt(sign + whole + fraction)
  let scale = fraction.length - Number(exponentText)
  if (scale < 0) {
    digits = digits * 10n ** BigInt(-scale)
    scale = 0
  }
  return { digits, scale }
}

/** The exact decimal a finite JS number was written as (its shortest round-trip text). */
export const decimalOf = (n: number): Decimal => {
  if (!Number.isFinite(n)) throw new RangeError("not a finite number")
  const decimal = parseDecimal(String(n))
  if (decimal === undefined) throw new RangeError(`unexpected number text ${String(n)}`)
  return decimal
}

const pow10 = (k: number) => 10n ** BigInt(k)

/** -1, 0 or 1 as `cents / 100` is below, equal to or above `n`, exactly. */
export const compareCents = (cents: number, n: number): -1 | 0 | 1 => {
  const { digits, scale } = decimalOf(n)
  // cents/100 vs digits/10^scale  <=>  cents*10^scale vs digits*100
  const left = BigInt(cents) * pow10(scale)
  const right = digits * 100n
  return left < right ? -1 : left > right ? 1 : 0
}

/** `n` in units of 10^-places, if it has at most `places` decimals. */
export const toUnits = (n: number, places: number): bigint | undefined => {
  const { digits, scale } = decimalOf(n)
  if (scale <= places) return digits * pow10(places - scale)
  // trailing zeros beyond `places` are fine
  const excess = pow10(scale - places)
  return digits % excess === 0n ? digits / excess : undefined
}

/** Cents as the JSON number of USD (at most two decimals). */
export const usd = (cents: number | bigint): number => Number(cents) / 100

/** `amountMicros * basisPoints / 10^4`, in cents, rounded half-up (amounts are never negative). */
export const percentOfMicrosInCents = (amountMicros: bigint, basisPoints: number): bigint =>
  // micros * bp / 10^4 (percent) / 10^4 (micros per cent) ; half-up: add half the divisor first
  (amountMicros * BigInt(basisPoints) + 50_000_000n) / 100_000_000n

export const MICROS_PER_CENT = 10_000n

/** The smallest whole number of cents >= n USD, exactly. */
export const centsCeil = (n: number): number => {
  const { digits, scale } = decimalOf(n)
  const numerator = digits * 100n
  const denominator = pow10(scale)
  const q = numerator / denominator
  return Number(numerator % denominator !== 0n && numerator > 0n ? q + 1n : q)
}

/** The largest whole number of cents <= the decimal's USD, exactly. */
const floorCents = ({ digits, scale }: Decimal): number => {
  const numerator = digits * 100n
  const denominator = pow10(scale)
  const q = numerator / denominator
  return Number(numerator % denominator !== 0n && numerator < 0n ? q - 1n : q)
}

/** The largest whole number of cents <= n USD, exactly. */
export const centsFloor = (n: number): number => floorCents(decimalOf(n))

/**
 * The literal text of the number at top-level `key` of a JSON object text (the last one, as
 * JSON.parse keeps), or undefined. Strings, nested values and escaped keys are read as JSON reads
 * them; the text is assumed to be JSON already (JSON.parse accepted it).
 */
export const topLevelNumberText = (json: string, key: string): string | undefined => {
  let found: string | undefined
  let depth = 0
  let i = 0
  let pendingKey: string | undefined
  const n = json.length
  const stringEnd = (from: number) => {
    let j = from + 1
    while (j < n && json[j] !== "\"") j += json[j] === "\\" ? 2 : 1
    return j + 1
  }
  while (i < n) {
    const c = json[i]!
    if (c === "\"") {
      const end = stringEnd(i)
      // a string right after `{` or `,` at the top level is a key
      if (depth === 1 && pendingKey === "") {
        const key: unknown = JSON.parse(json.slice(i, end))
        pendingKey = typeof key === "string" ? key : ""
      }
      i = end
      continue
    }
    if (c === "{" || c === "[") {
      depth++
      pendingKey = depth === 1 && c === "{" ? "" : undefined
    } else if (c === "}" || c === "]") {
      depth--
    } else if (c === "," && depth === 1) {
      pendingKey = ""
    } else if (c === ":" && depth === 1 && pendingKey !== undefined) {
      let j = i + 1
      while (j < n && " \t\r\n".includes(json[j]!)) j++
      let k = j
      while (k < n && "+-.0123456789eE".includes(json[k]!)) k++
      if (pendingKey === key) found = k > j ? json.slice(j, k) : undefined
      pendingKey = undefined
      i = k > j ? k : i + 1
      continue
    }
    i++
  }
  return found
}

/** Catalogue prices are below 10^8 USD (Admin.ts, CatalogItem.ts): an amount from 10^9 on is above all of them. */
const ABOVE_EVERY_PRICE = 1e9

const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/

/**
 * A money field as the handlers compare it with whole cents: a number that compares with every
 * catalogue price exactly as the client's literal does, whatever its length or exponent.
 * JSON.parse reads a literal into the nearest binary double, which loses digits past about 16
 * (0.99999999999999999999 becomes 1), reads 1e-400 as 0 and 1e400 as Infinity. A literal of
 * whole cents is its value; one with more below a cent is its cents rounded down plus half a cent
 * (so never 0 when it is positive); one of 10^9 or more is 10^9. A literal of zero or below comes
 * back zero or below, as the caller's check for > 0 needs. Linear in the literal's length: the
 * digits are read as text, never as one number.
 */
export const exactForCents = (parsed: number, literal: string | undefined): number => {
  const match = literal === undefined ? null : JSON_NUMBER.exec(literal)
  if (match === null) return Math.min(parsed, ABOVE_EVERY_PRICE)
  const [, sign, whole, fraction = "", exponentText = "0"] = match
  const written = whole + fraction
  const first = written.search(/[1-9]/)
  if (first < 0) return 0
  if (sign === "-") return -1
  let last = written.length
  while (written[last - 1] === "0") last--
  // value = 0.<significant> x 10^point (Number() of a long exponent is only approximate, and
  // anything that far out is past either end anyway)
  const significant = written.slice(first, last)
  const point = whole.length - first + Number(exponentText)
  if (point > 9) return ABOVE_EVERY_PRICE
  const centsDigits = point + 2
  const floorCents = centsDigits <= 0 ? 0 : Number(significant.slice(0, centsDigits).padEnd(centsDigits, "0"))
  return significant.length <= centsDigits ? floorCents / 100 : (floorCents * 10 + 5) / 1000
}
