/**
 * Trade URLs and SteamID64 (CONTRACT 5.1): `https://steamcommunity.com/tradeoffer/new/?partner=<1..4294967295>&token=<8 of [A-Za-z0-9_-]>`;
 * the recipient SteamID64 is 76561197960265728 + partner.
 */
const STEAM_ID64_BASE = 76561197960265728n
const MAX_ACCOUNT_ID = 4294967295n

export interface TradeUrl {
  readonly partner: bigint
  readonly token: string
  readonly steamId: string
}

/**
 * Exactly the form above, character for character: "anything else" (CONTRACT 5.1) includes what a
 * URL parser would forgive, such as the parameters in the other order, percent-encoded digits, an
 * upper-case host or an empty fragment.
 */
const TRADE_URL = /^https:\/\/steamcommunity\.com\/tradeoffer\/new\/\?partner=([1-9]\d{0,9})&token=([A-Za-z0-9_-]{8})$/

export const parseTradeUrl = (text: string): TradeUrl | undefined => {
  const match = TRADE_URL.exec(text)
  if (match === null) return undefined
  const partner = BigInt(match[1]!)
  if (partner > MAX_ACCOUNT_ID) return undefined
  return { partner, token: match[2]!, steamId: String(STEAM_ID64_BASE + partner) }
}

/** A SteamID64 of an individual account: 17 digits, within the account-id range (76561197960265729 to 76561202255233023). */
export const isSteamId64 = (text: string): boolean => {
  if (!/^\d{17}$/.test(text)) return false
  const value = BigInt(text)
  return value > STEAM_ID64_BASE && value <= STEAM_ID64_BASE + MAX_ACCOUNT_ID
}
