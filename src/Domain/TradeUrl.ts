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

export const parseTradeUrl = (text: string): TradeUrl | undefined => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return undefined
  }
  if (url.protocol !== "https:" || url.hostname !== "steamcommunity.com" || url.pathname !== "/tradeoffer/new/") return undefined
  if (url.username !== "" || url.password !== "" || url.port !== "" || url.hash !== "") return undefined
  const keys = Array.from(url.searchParams.keys())
  if (keys.length !== 2 || !keys.includes("partner") || !keys.includes("token")) return undefined
  const partnerText = url.searchParams.get("partner")!
  const token = url.searchParams.get("token")!
  if (!/^[1-9]\d{0,9}$/.test(partnerText) || !/^[A-Za-z0-9_-]{8}$/.test(token)) return undefined
  const partner = BigInt(partnerText)
  if (partner < 1n || partner > MAX_ACCOUNT_ID) return undefined
  return { partner, token, steamId: String(STEAM_ID64_BASE + partner) }
}

/** A SteamID64 of an individual account: 17 digits, within the account-id range. */
export const isSteamId64 = (text: string): boolean => {
  if (!/^7656119\d{10}$/.test(text)) return false
  const value = BigInt(text)
  return value > STEAM_ID64_BASE && value <= STEAM_ID64_BASE + MAX_ACCOUNT_ID
}
