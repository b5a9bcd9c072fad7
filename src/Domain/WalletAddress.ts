/**
 * USDT deposit addresses per network: TRC-20 (TRON) is base58check of 0x41 and a 20-byte account
 * (34 characters starting with T); BEP-20 (BNB Smart Chain) is 0x and 40 hex digits. An address is
 * bound to a wallet only when it is well-formed for the wallet's network (spec 2.3).
 */
import { createHash } from "node:crypto"

export type Network = "tron" | "bsc"

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
const TRON_VERSION = 0x41

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest()
const checksum = (payload: Uint8Array) => sha256(sha256(payload)).subarray(0, 4)

const base58Encode = (bytes: Uint8Array): string => {
  let n = BigInt(`0x${Buffer.from(bytes).toString("hex") || "0"}`)
  let out = ""
  while (n > 0n) {
    out = BASE58[Number(n % 58n)] + out
    n /= 58n
  }
  for (const byte of bytes) {
    if (byte !== 0) break
    out = "1" + out
  }
  return out
}

const base58Decode = (text: string): Uint8Array | undefined => {
  let n = 0n
  for (const char of text) {
    const digit = BASE58.indexOf(char)
    if (digit < 0) return undefined
    n = n * 58n + BigInt(digit)
  }
  const hex = n === 0n ? "" : n.toString(16)
  const body = Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, "hex")
  const zeros = text.length - text.replace(/^1+/, "").length
  return Buffer.concat([Buffer.alloc(zeros), body])
}

/** The TRON address of a 20-byte account. */
export const tronAddress = (account: Uint8Array): string => {
  const payload = Buffer.concat([Buffer.from([TRON_VERSION]), Buffer.from(account.subarray(0, 20))])
  return base58Encode(Buffer.concat([payload, checksum(payload)]))
}

/** The BNB Smart Chain address of a 20-byte account (lower case). */
export const bscAddress = (account: Uint8Array): string => `0x${Buffer.from(account.subarray(0, 20)).toString("hex")}`

const isTronAddress = (address: string): boolean => {
  if (!/^T[1-9A-HJ-NP-Za-km-z]{33}$/.test(address)) return false
  const bytes = base58Decode(address)
  if (bytes === undefined || bytes.length !== 25 || bytes[0] !== TRON_VERSION) return false
  return Buffer.from(checksum(bytes.subarray(0, 21))).equals(Buffer.from(bytes.subarray(21)))
}

const isBscAddress = (address: string): boolean => /^0x[0-9a-fA-F]{40}$/.test(address)

/** Whether `address` is a well-formed deposit address on `network`. */
export const isValidAddress = (network: Network, address: string): boolean => network === "tron" ? isTronAddress(address) : isBscAddress(address)
