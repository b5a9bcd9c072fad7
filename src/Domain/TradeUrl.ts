/**
 * Trade URLs and SteamID64 (CONTRACT 5.1): `https://steamcommunity.com/tradeoffer/new/?partner=<1..4294967295>&token=<8 of [A-Za-z0-9_-]>`;
 * the recipient SteamID64 is 76561197960265728 + partner. Both rules are regular expressions as
 * well, so that the OpenAPI document states exactly what the handlers accept.
 */
const STEAM_ID64_BASE = 76561197960265728n
const MAX_ACCOUNT_ID = 4294967295n

export interface TradeUrl {
  readonly partner: bigint
  readonly token: string
  readonly steamId: string
}

/** `n` more digits of any value. */
const anyDigits = (n: number) => n === 0 ? "" : n === 1 ? "\\d" : `\\d{${n}}`
const digitClass = (from: number, to: number) => from === to ? String(from) : from === 0 && to === 9 ? "\\d" : `[${from}-${to}]`

/** A regular expression (without anchors) for the decimal numbers lo..hi written with as many digits as both. */
const sameLengthRange = (lo: string, hi: string): string => {
  if (lo === hi) return lo
  const rest = lo.length - 1
  const [first, last] = [Number(lo[0]), Number(hi[0])]
  if (/^0*$/.test(lo.slice(1)) && /^9*$/.test(hi.slice(1))) {
    return first === 0 && last === 9 ? anyDigits(rest + 1) : digitClass(first, last) + anyDigits(rest)
  }
  if (first === last) return lo[0] + sameLengthRange(lo.slice(1), hi.slice(1))
  const parts = [lo[0] + sameLengthRange(lo.slice(1), "9".repeat(rest))]
  if (first + 1 <= last - 1) parts.push(digitClass(first + 1, last - 1) + anyDigits(rest))
  parts.push(hi[0] + sameLengthRange("0".repeat(rest), hi.slice(1)))
  return `(?:${parts.join("|")})`
}

/** A regular expression (without anchors) for the decimal numbers lo..hi (lo >= 1) without leading zeros. */
export const numberRangePattern = (lo: bigint, hi: bigint): string => {
  const [low, high] = [String(lo), String(hi)]
  // one length: the digit-by-digit range (the parts below need the ends' lengths to differ, or a
  // whole length between them)
  if (low.length === high.length) return sameLengthRange(low, high)
  const parts: Array<string> = []
  // every number of a whole length between the two ends: one part for all of them
  const wholeFrom = low === `1${"0".repeat(low.length - 1)}` ? low.length : low.length + 1
  const wholeTo = high === "9".repeat(high.length) ? high.length : high.length - 1
  if (wholeFrom > low.length) parts.push(sameLengthRange(low, low.length === high.length ? high : "9".repeat(low.length)))
  if (wholeFrom <= wholeTo) parts.push(`[1-9]${wholeFrom === wholeTo ? anyDigits(wholeFrom - 1) : `\\d{${wholeFrom - 1},${wholeTo - 1}}`}`)
  if (wholeTo < high.length && high.length > low.length) parts.push(sameLengthRange(`1${"0".repeat(high.length - 1)}`, high))
  return parts.length === 1 ? parts[0]! : `(?:${parts.join("|")})`
}

/** A SteamID64 of an individual account: 76561197960265729 to 76561202255233023. */
export const STEAM_ID64_PATTERN = `^${numberRangePattern(STEAM_ID64_BASE + 1n, STEAM_ID64_BASE + MAX_ACCOUNT_ID)}$`

/**
 * Exactly the form above, character for character: "anything else" (CONTRACT 5.1) includes what a
 * URL parser would forgive, such as the parameters in the other order, percent-encoded digits, an
 * upper-case host or an empty fragment.
 */
export const TRADE_URL_PATTERN = `^https://steamcommunity\\.com/tradeoffer/new/\\?partner=(${numberRangePattern(1n, MAX_ACCOUNT_ID)})&token=([A-Za-z0-9_-]{8})$`

const TRADE_URL = new RegExp(TRADE_URL_PATTERN)
const STEAM_ID64 = new RegExp(STEAM_ID64_PATTERN)

export const parseTradeUrl = (text: string): TradeUrl | undefined => {
  const match = TRADE_URL.exec(text)
  if (match === null) return undefined
  const partner = BigInt(match[1]!)
  return { partner, token: match[2]!, steamId: String(STEAM_ID64_BASE + partner) }
}

export const isSteamId64 = (text: string): boolean => STEAM_ID64.test(text)
