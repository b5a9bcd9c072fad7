/**
 * Request fields /buy, /buy-sync and /buy-by-name refuse with 400 (spec 4.3, 7.2; CONTRACT 5.1, 6),
 * each with the code it must get: one field changed at a time in an otherwise valid body.
 */
import { steamIdOf, tradeUrl } from "./purchase-requests.js"

const url = (partner: string, token = "abcd1234") => `https://steamcommunity.com/tradeoffer/new/?partner=${partner}&token=${token}`

/** /buy and /buy-sync: [what, body change (undefined deletes the field), code]. */
export const INVALID_BUY_FIELDS: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
  ["item_id missing", { item_id: undefined }, "MERCHANT_INVALID_ITEM_ID"],
  ["item_id not a uuid", { item_id: "not-a-uuid" }, "MERCHANT_INVALID_ITEM_ID"],
  ["item_id the empty uuid", { item_id: "00000000-0000-0000-0000-000000000000" }, "MERCHANT_INVALID_ITEM_ID"],
  ["item_id a number", { item_id: 12345 }, "MERCHANT_INVALID_ITEM_ID"],
  ["item_id null", { item_id: null }, "MERCHANT_INVALID_ITEM_ID"],
  ["max_price 0", { max_price: 0 }, "MERCHANT_INVALID_MAX_PRICE"],
  ["max_price -1", { max_price: -1 }, "MERCHANT_INVALID_MAX_PRICE"],
  ["max_price a string", { max_price: "10" }, "MERCHANT_INVALID_MAX_PRICE"],
  ["max_price missing", { max_price: undefined }, "MERCHANT_INVALID_MAX_PRICE"],
  ["custom_id empty", { custom_id: "" }, "MERCHANT_INVALID_CUSTOM_ID"],
  ["custom_id 101 chars", { custom_id: "x".repeat(101) }, "MERCHANT_INVALID_CUSTOM_ID"],
  ["custom_id missing", { custom_id: undefined }, "MERCHANT_INVALID_CUSTOM_ID"],
  ["custom_id a number", { custom_id: 7 }, "MERCHANT_INVALID_CUSTOM_ID"],
  ["trade URL over http", { target_trade_url: "http://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcd1234" }, "MERCHANT_INVALID_TRADE_URL"],
  [
    "trade URL on another host",
    { target_trade_url: "https://steamcommunity.example.com/tradeoffer/new/?partner=12345678&token=abcd1234" },
    "MERCHANT_INVALID_TRADE_URL"
  ],
  [
    "trade URL on another path",
    { target_trade_url: "https://steamcommunity.com/tradeoffer/old/?partner=12345678&token=abcd1234" },
    "MERCHANT_INVALID_TRADE_URL"
  ],
  ["trade URL partner 0", { target_trade_url: url("0") }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL partner 4294967296", { target_trade_url: url("4294967296") }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL partner not a number", { target_trade_url: url("abc") }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL token of 7 chars", { target_trade_url: url("12345678", "abcd123") }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL token of 9 chars", { target_trade_url: url("12345678", "abcd12345") }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL token with a bad char", { target_trade_url: url("12345678", "abcd!234") }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL with an extra parameter", { target_trade_url: `${url("12345678")}&foo=bar` }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL without token", { target_trade_url: "https://steamcommunity.com/tradeoffer/new/?partner=12345678" }, "MERCHANT_INVALID_TRADE_URL"],
  // CONTRACT 5.1: "anything else", also what a URL parser would forgive
  [
    "trade URL with token before partner",
    { target_trade_url: "https://steamcommunity.com/tradeoffer/new/?token=abcd1234&partner=12345678" },
    "MERCHANT_INVALID_TRADE_URL"
  ],
  ["trade URL with a percent-encoded partner", { target_trade_url: url("%31%32%33") }, "MERCHANT_INVALID_TRADE_URL"],
  [
    "trade URL with an upper-case host",
    { target_trade_url: "https://SteamCommunity.com/tradeoffer/new/?partner=12345678&token=abcd1234" },
    "MERCHANT_INVALID_TRADE_URL"
  ],
  ["trade URL with an empty fragment", { target_trade_url: `${url("12345678")}#` }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL missing", { target_trade_url: undefined }, "MERCHANT_INVALID_TRADE_URL"],
  ["trade URL not a URL", { target_trade_url: "steam please" }, "MERCHANT_INVALID_TRADE_URL"],
  ["target_steam_id too short", { target_steam_id: "123" }, "MERCHANT_INVALID_STEAM_ID"],
  ["target_steam_id not digits", { target_steam_id: "7656119abcdefghij" }, "MERCHANT_INVALID_STEAM_ID"],
  ["target_steam_id of account 0", { target_steam_id: "76561197960265728" }, "MERCHANT_INVALID_STEAM_ID"],
  ["target_steam_id beyond the account range", { target_steam_id: "76561202255233024" }, "MERCHANT_INVALID_STEAM_ID"],
  ["target_steam_id a number", { target_steam_id: 76561197972611392 }, "MERCHANT_INVALID_STEAM_ID"],
  ["target_steam_id valid but another account", { target_steam_id: steamIdOf(87654321) }, "MERCHANT_STEAM_ID_MISMATCH"]
]

/** /buy-by-name: [body change (undefined deletes the field), code]. */
export const INVALID_BY_NAME_FIELDS: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
  [{ market_hash_name: "" }, "MERCHANT_INVALID_MARKET_HASH_NAME"],
  [{ market_hash_name: "n".repeat(201) }, "MERCHANT_INVALID_MARKET_HASH_NAME"],
  [{ market_hash_name: undefined }, "MERCHANT_INVALID_MARKET_HASH_NAME"],
  [{ max_price: 0 }, "MERCHANT_INVALID_MAX_PRICE"],
  [{ max_price: "5" }, "MERCHANT_INVALID_MAX_PRICE"],
  [{ trade_url: tradeUrl("short") }, "MERCHANT_INVALID_TRADE_URL"],
  [{ trade_url: undefined }, "MERCHANT_INVALID_TRADE_URL"],
  [{ custom_id: "" }, "MERCHANT_INVALID_CUSTOM_ID"],
  [{ custom_id: "y".repeat(101) }, "MERCHANT_INVALID_CUSTOM_ID"],
  [{ estimated_time: 9 }, "MERCHANT_INVALID_ESTIMATED_TIME"],
  [{ estimated_time: 10.5 }, "MERCHANT_INVALID_ESTIMATED_TIME"],
  [{ estimated_time: "30" }, "MERCHANT_INVALID_ESTIMATED_TIME"]
]
