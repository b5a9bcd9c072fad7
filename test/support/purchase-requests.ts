/**
 * What the black-box tests and the chaos command send to buy (spec 4.3, 4.4; CONTRACT 5): the
 * settings purchases run with, money in cents through the deposit commission, trade URLs for the
 * simulator's test tokens, catalogue items and the purchase request bodies. No test runner here:
 * the chaos command (chaos/) imports it too; the assertions on answers are in purchases.ts.
 */
import { randomUUID } from "node:crypto"

/** Small budgets, a quiet synthetic catalogue, no rate limit getting in the way of many requests. */
export const PURCHASE_ENV: Record<string, string> = {
  SIM_CATALOGUE_SIZE: "0",
  SIM_CHURN_PER_SECOND: "0",
  SIM_TIME_SCALE: "0.02",
  BUY_SYNC_WAIT_SECONDS: "2",
  BY_NAME_BUDGET_SECONDS: "6",
  RATE_LIMIT_RPS: "100000",
  RATE_LIMIT_BURST: "100000"
}

export interface Merchant {
  readonly id: string
  readonly apiKey: string
}

// ---- money -------------------------------------------------------------------------------------

/** USD (a JSON number with at most two decimals) in integer cents. */
export const cents = (usd: number) => Math.round(usd * 100)

/** The credited cents of a deposit of `sentCents` USDT (spec 2.5: 1 % below 5000, 0.5 % from 5000; half-up). */
export const creditedCents = (sentCents: number) => sentCents - (sentCents < 500_000 ? Math.floor((sentCents + 50) / 100) : Math.floor((sentCents + 100) / 200))

/** The smallest amount sent (in cents) that credits exactly `target` cents, if any does. */
export const sentCentsFor = (target: number) => {
  for (let sent = target; sent <= target * 2 + 200; sent++) if (creditedCents(sent) === target) return sent
  throw new Error(`no amount sent credits exactly ${target} cents`)
}

// ---- trade URLs --------------------------------------------------------------------------------

export const PARTNER = 12345678
export const STEAM_ID64_BASE = 76561197960265728n
export const steamIdOf = (partner: number) => String(STEAM_ID64_BASE + BigInt(partner))

/** A trade URL whose token picks the simulator's outcome (CONTRACT 5.1); "complete" is any other token. */
export const tradeUrl = (token = "complete", partner = PARTNER) => `https://steamcommunity.com/tradeoffer/new/?partner=${partner}&token=${token}`

/** The simulator's test tokens (CONTRACT 5.1). */
export const TOKENS = {
  complete: "complete",
  declined: "declined",
  expired: "expired0",
  private: "private0",
  badtoken: "badtoken",
  slowack: "slowack0",
  topup: "topup000",
  revbuyer: "revbuyer",
  revseller: "revselr0",
  review: "review00"
} as const

// ---- catalogue ---------------------------------------------------------------------------------

export interface PurchaseItemInput {
  readonly id?: string
  readonly market_hash_name: string
  readonly price: number
  readonly delivery_type: "instant" | "manual"
  readonly estimated_delivery_minutes?: number | null
  readonly image_url?: string | null
  readonly exterior?: string | null
  readonly float?: number | null
  readonly sim?: { readonly acquire?: "unavailable" | "price_changed"; readonly reversal?: "unknown" }
}

export const uniqueName = (prefix = "Test Skin") => `${prefix} | ${randomUUID().slice(0, 8)} (Field-Tested)`

/** An item of `priceCents` under `name` (a unique name by default). */
export const itemOf = (priceCents: number, extra: Partial<PurchaseItemInput> = {}): PurchaseItemInput => ({
  market_hash_name: uniqueName(),
  price: priceCents / 100,
  delivery_type: "instant",
  estimated_delivery_minutes: 15,
  image_url: "https://img.example/skin.png",
  exterior: "Field-Tested",
  float: 0.25,
  ...extra
})

// ---- requests ----------------------------------------------------------------------------------

export interface BuyParams {
  readonly itemId: string
  readonly maxPrice: number
  readonly customId?: string
  readonly token?: string
  readonly partner?: number
  readonly steamId?: string
}

export const buyBody = (p: BuyParams) => ({
  item_id: p.itemId,
  max_price: p.maxPrice,
  custom_id: p.customId ?? `c-${randomUUID()}`,
  target_trade_url: tradeUrl(p.token, p.partner),
  ...(p.steamId !== undefined ? { target_steam_id: p.steamId } : {})
})

export interface ByNameParams {
  readonly name: string
  readonly maxPrice: number
  readonly customId?: string
  readonly token?: string
  readonly partner?: number
  readonly estimatedTime?: number | null
}

export const byNameBody = (p: ByNameParams) => ({
  market_hash_name: p.name,
  max_price: p.maxPrice,
  trade_url: tradeUrl(p.token, p.partner),
  custom_id: p.customId ?? `n-${randomUUID()}`,
  ...(p.estimatedTime !== undefined ? { estimated_time: p.estimatedTime } : {})
})
