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

/** The exact decimal a finite JS number was written as (its shortest round-trip text). */
export const decimalOf = (n: number): Decimal => {
  if (!Number.isFinite(n)) throw new RangeError("not a finite number")
  const match = String(n).match(/^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/)
  if (!match) throw new RangeError(`unexpected number text ${String(n)}`)
  const [, sign, whole, fraction = "", exponentText = "0"] = match
  const exponent = Number(exponentText)
  let digits = BigInt(sign + whole + fraction)
  let scale = fraction.length - exponent
  if (scale < 0) {
    digits = digits * 10n ** BigInt(-scale)
    scale = 0
  }
  return { digits, scale }
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

/** The largest whole number of cents <= n USD, exactly. */
export const centsFloor = (n: number): number => {
  const { digits, scale } = decimalOf(n)
  const numerator = digits * 100n
  const denominator = pow10(scale)
  const q = numerator / denominator
  return Number(numerator % denominator !== 0n && numerator < 0n ? q - 1n : q)
}
