import * as fc from "fast-check"
import { randomBytes } from "node:crypto"
import { crc32 } from "node:zlib"
import { describe, expect, it } from "vitest"
import { crc32Combine } from "../../src/Catalogue/Crc32.js"

describe("crc32Combine", () => {
  it("gives the CRC-32 of A followed by B from crc(A), crc(B) and len(B)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.uint8Array({ maxLength: 3000 }), (a, b) => {
        expect(crc32Combine(crc32(a), crc32(b), b.length)).toBe(crc32(Buffer.concat([a, b])))
      }),
      { numRuns: 300 }
    )
  })

  it("holds for long parts (lengths of many bits) and chains over many parts", () => {
    const parts = [0, 1, 7, 65_536, 1_000_003, 3_000_001].map((n) => randomBytes(n))
    let combined = 0
    for (const part of parts) combined = crc32Combine(combined, crc32(part), part.length)
    expect(combined).toBe(crc32(Buffer.concat(parts)))
  })
})
