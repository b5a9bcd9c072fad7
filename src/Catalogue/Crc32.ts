/**
 * CRC-32 of a concatenation from the CRCs of its parts (zlib's crc32_combine, which node's zlib
 * does not expose): the dump joins compressed pieces built at different times without reading
 * their bytes again.
 */

const times = (matrix: Uint32Array, vector: number): number => {
  let sum = 0
  for (let i = 0; vector !== 0; i++, vector >>>= 1) if (vector & 1) sum ^= matrix[i]!
  return sum >>> 0
}

const square = (into: Uint32Array, matrix: Uint32Array) => {
  for (let n = 0; n < 32; n++) into[n] = times(matrix, matrix[n]!)
}

/** The CRC-32 of A followed by B, given crc(A), crc(B) and B's length in bytes. */
export const crc32Combine = (crcA: number, crcB: number, lengthB: number): number => {
  if (lengthB <= 0) return crcA >>> 0
  const even = new Uint32Array(32)
  const odd = new Uint32Array(32)
  // the operator for one zero bit: the CRC-32 polynomial, then shifts
  odd[0] = 0xedb88320
  for (let n = 1, row = 1; n < 32; n++, row <<= 1) odd[n] = row
  square(even, odd) // two zero bits
  square(odd, even) // four zero bits
  let crc = crcA >>> 0
  let length = lengthB
  // apply len(B) zero bytes to crc(A), one bit of the length at a time
  for (;;) {
    square(even, odd)
    if (length % 2 === 1) crc = times(even, crc)
    length = Math.floor(length / 2)
    if (length === 0) break
    square(odd, even)
    if (length % 2 === 1) crc = times(odd, crc)
    length = Math.floor(length / 2)
    if (length === 0) break
  }
  return (crc ^ crcB) >>> 0
}
