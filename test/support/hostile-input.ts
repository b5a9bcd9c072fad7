/**
 * The makings of hostile input: a NUL character (PostgreSQL's text cannot hold one), a cursor
 * forged from any position, JSON nested absurdly deep, and a buy body with fields written raw.
 */
import { buyBody } from "./purchase-requests.js"

export const NUL = "\u0000"

/** A cursor as the service encodes one (base64url JSON), of any position the test makes up. */
export const forgedCursor = (position: unknown) => Buffer.from(JSON.stringify(position)).toString("base64url")

/** `[[[…]]]` nested `depth` deep, as JSON text. */
export const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth)

/** The JSON text of a valid /buy body of `itemId` (max_price 5) whose `fields` are written as the raw JSON given. */
export const buyTextWith = (itemId: string, fields: Record<string, string>) => {
  const body = { ...buyBody({ itemId, maxPrice: 5 }), ...Object.fromEntries(Object.keys(fields).map((k) => [k, 0])) }
  let text = JSON.stringify(body)
  for (const [k, raw] of Object.entries(fields)) text = text.replace(`"${k}":0`, `"${k}":${raw}`)
  return text
}
