/**
 * CRC-32 of a concatenation from the CRCs of its parts (zlib's crc32_combine, which node's zlib
 * does not expose): the dump joins compressed pieces built at different times without reading
 * their bytes again. As zlib 1.2.12 does it: crc(A) times x^(8·len(B)) modulo the polynomial, the
 * power taken from a table of x^(2^n), so a combine costs a few dozen multiplications of 32 bits.
 */

const POLYNOMIAL = 0xedb88320
const TOP_BIT = 0x8000_0000

/** a(x)·b(x) modulo the CRC-32 polynomial, in the reflected bit order of CRC-32. */
const multiplyModP = (a: number, b: number): number => {
  let product = 0
  for (let m = TOP_BIT; m !== 0; m >>>= 1) {
    if ((a & m) !== 0) {
      product ^= b
      if ((a & (m - 1)) === 0) break
    }
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLYNOMIAL : b >>> 1
  }
  return product >>> 0
}

/** x^(2^n) modulo the polynomial, n = 0..31 (the powers repeat with period 32 beyond). */
const POWERS_OF_X = (() => {
  const table = new Uint32Array(32)
  let p = 0x4000_0000 // x^1
  table[0] = p
  for (let n = 1; n < 32; n++) table[n] = p = multiplyModP(p, p)
  return table
})()

/** x^(n·2^k) modulo the polynomial. */
const xPowerModP = (n: number, k: number): number => {
  let p = TOP_BIT // x^0
  for (; n > 0; n = Math.floor(n / 2), k++) if (n % 2 === 1) p = multiplyModP(POWERS_OF_X[k & 31]!, p)
  return p
}

/** The CRC-32 of A followed by B, given crc(A), crc(B) and B's length in bytes. */
export const crc32Combine = (crcA: number, crcB: number, lengthB: number): number =>
  lengthB <= 0 ? crcA >>> 0 : (multiplyModP(xPowerModP(lengthB, 3), crcA >>> 0) ^ crcB) >>> 0
