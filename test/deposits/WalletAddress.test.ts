/** Deposit address formats (spec 2.3: an address is bound only once validated for its network). */
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { bscAddress, isValidAddress, tronAddress } from "../../src/Domain/WalletAddress.js"

const account = (seed: string) => createHash("sha256").update(seed).digest()

describe("addresses", () => {
  it("TRON addresses are 34 base58check characters starting with T, and verify; BEP-20 ones are 0x and 40 hex digits", () => {
    for (let i = 0; i < 200; i++) {
      const tron = tronAddress(account(`a${i}`))
      expect(tron).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/)
      expect(isValidAddress("tron", tron)).toBe(true)
      const bsc = bscAddress(account(`b${i}`))
      expect(bsc).toMatch(/^0x[0-9a-f]{40}$/)
      expect(isValidAddress("bsc", bsc)).toBe(true)
    }
  })

  it("a known TRON address verifies (USDT's own contract)", () => {
    expect(isValidAddress("tron", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")).toBe(true)
  })

  it("refuses a changed character (the checksum), the wrong network, the wrong length or alphabet", () => {
    const tron = tronAddress(account("x"))
    const flipped = tron.slice(0, 10) + (tron[10] === "a" ? "b" : "a") + tron.slice(11)
    for (const bad of [flipped, tron.slice(0, -1), `${tron}1`, tron.replace(/^T/, "X"), tron.replace(/.$/, "0"), "", "T"]) {
      expect([bad, isValidAddress("tron", bad)]).toEqual([bad, false])
    }
    expect(isValidAddress("tron", bscAddress(account("y")))).toBe(false)
    expect(isValidAddress("bsc", tron)).toBe(false)
    for (const bad of ["0x123", `0x${"g".repeat(40)}`, `${"a".repeat(42)}`, `0x${"a".repeat(41)}`, ""]) {
      expect([bad, isValidAddress("bsc", bad)]).toEqual([bad, false])
    }
  })
})
