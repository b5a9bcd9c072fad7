/**
 * Webhook signatures (spec 6): `X-Signature` is the lowercase hex HMAC-SHA256 of
 * `X-Timestamp + "." + body`, keyed by the merchant's webhook secret. Receivers accept a timestamp
 * within 300 s of their clock. Used by the sender and by the CLI's local receiver.
 */
import { createHmac, timingSafeEqual } from "node:crypto"

export const TIMESTAMP_TOLERANCE_SECONDS = 300

export const sign = (secret: string, timestamp: string, body: string | Uint8Array): string =>
  createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex")

export type Verdict = "valid" | "bad-signature" | "stale-timestamp" | "missing-headers"

/**
 * Checks a delivery as a receiver should: the timestamp is digits within the tolerance of `nowSeconds`,
 * and one of the signatures (X-Signature, or X-Signature-Previous while a rotated secret overlaps)
 * equals the HMAC under `secret`, compared in constant time.
 */
export const verify = (input: {
  readonly secret: string
  readonly body: string | Uint8Array
  readonly timestamp: string | undefined
  readonly signatures: ReadonlyArray<string | undefined>
  readonly nowSeconds: number
}): Verdict => {
  const { timestamp } = input
  const presented = input.signatures.filter((s): s is string => s !== undefined && s !== "")
  if (timestamp === undefined || presented.length === 0) return "missing-headers"
  if (!/^\d{1,15}$/.test(timestamp) || Math.abs(input.nowSeconds - Number(timestamp)) > TIMESTAMP_TOLERANCE_SECONDS) {
    return "stale-timestamp"
  }
  const expected = Buffer.from(sign(input.secret, timestamp, input.body), "utf8")
  const matches = presented.map((signature) => {
    const given = Buffer.from(signature, "utf8")
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
  return matches.includes(true) ? "valid" : "bad-signature"
}
