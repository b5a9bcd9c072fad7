/**
 * Every answer the fast handler gives once it has taken a request (src/FastLane.ts: after the
 * authentication took its rate-limit token) is byte for byte the HttpApi path's answer to the same
 * request: the status line, every header (in order) but Date, X-Request-Id and the tokens left,
 * and the body. The same request goes once with a key whose merchant the fast handler knows (its
 * key is cached: the fast handler answers) and once with a fresh merchant's key (the fast handler
 * must look it up, so it declines, and HttpApi answers), over a raw socket.
 */
import { randomUUID } from "node:crypto"
import { connect } from "node:net"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { field } from "../support/expectations.js"
import { fastLaneAnswers, type RunningServer, startServer } from "../support/server.js"

const TRADE_URL = "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH"
const onPostgreSql = process.env["DATABASE_URL"] !== undefined && process.env["DATABASE_URL"] !== ""

let server: RunningServer
let itemId: string
beforeAll(async () => {
  server = await startServer({
    env: { SIM_CHURN_PER_SECOND: "0", SIM_CATALOGUE_SIZE: "50" },
    // the 500 case below: a merchant whose balance row is gone is a defect on both paths
    expectedErrors: [/unhandled defect/]
  })
  const browser = await server.createMerchant()
  const page = await server.merchant(browser.apiKey).call((client) => client.catalogue.listItems({ urlParams: { limit: 1 } }))
  itemId = page.items[0]!.id
})
afterAll(async () => {
  await server?.stop()
})

/** One request on its own connection, as sent; the whole answer as received. */
const raw = (method: string, path: string, key: string, body?: Buffer): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(server.baseUrl).port), "127.0.0.1")
    const head = [
      `${method} /api/v1/merchant${path} HTTP/1.1`,
      "Host: 127.0.0.1",
      `Authorization: Bearer ${key}`,
      "Connection: close",
      ...(body === undefined ? [] : ["Content-Type: application/json", `Content-Length: ${body.length}`])
    ].join("\r\n")
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("end", () => resolve(Buffer.concat(chunks)))
    socket.on("error", reject)
    socket.write(Buffer.concat([Buffer.from(`${head}\r\n\r\n`), body ?? Buffer.alloc(0)]))
  })

/** An answer without what differs between any two answers: its Date, request id and tokens left. */
const comparable = (answer: Buffer) => {
  const end = answer.indexOf("\r\n\r\n")
  const lines = answer.subarray(0, end).toString("latin1").split("\r\n")
  const varying = /^(date|x-request-id|x-ratelimit-remaining):/i
  return { head: lines.filter((line) => !varying.test(line)), body: answer.subarray(end + 4).toString("latin1") }
}

/** A merchant whose key the fast handler knows: one request went through HttpApi and cached it. */
const knownMerchant = async () => {
  const m = await server.createMerchant()
  expect((await server.api("/balance", { key: m.apiKey })).status).toBe(200)
  return m
}

/** The same request through both paths: the fast handler answered the first, HttpApi the second. */
const bothPaths = async (route: string, send: (merchant: { readonly id: string; readonly apiKey: string }) => Promise<Buffer>) => {
  const known = await knownMerchant()
  const fresh = await server.createMerchant()
  const before = await fastLaneAnswers(server, route)
  const viaFast = await send(known)
  const afterFast = await fastLaneAnswers(server, route)
  const viaHttpApi = await send(fresh)
  expect(afterFast).toBe(before + 1)
  expect(await fastLaneAnswers(server, route)).toBe(afterFast)
  return { viaFast, viaHttpApi }
}

const buyBody = (fields: Record<string, unknown>) =>
  JSON.stringify({ item_id: itemId, max_price: 1000, custom_id: `c-${randomUUID()}`, target_trade_url: TRADE_URL, ...fields })

const deep = "[".repeat(40) + "]".repeat(40)

/** [what, the body of a POST /buy (made once the item is known), the status and code both must answer] */
const bodies: ReadonlyArray<readonly [string, () => Buffer, number, string]> = [
  ["a body that is not JSON", () => Buffer.from("{\"item_id\": "), 400, "MERCHANT_MALFORMED_JSON"],
  [
    "a body that is not UTF-8",
    () => Buffer.concat([Buffer.from("{\"custom_id\":\""), Buffer.from([0xff, 0xfe]), Buffer.from("\"}")]),
    400,
    "MERCHANT_MALFORMED_JSON"
  ],
  ["a field nested too deep", () => Buffer.from(`{"custom_id": ${deep}}`), 400, "MERCHANT_INVALID_CUSTOM_ID"],
  ["JSON null", () => Buffer.from("null"), 400, "MERCHANT_INVALID_ITEM_ID"],
  ["a JSON array", () => Buffer.from("[1, 2]"), 400, "MERCHANT_INVALID_ITEM_ID"],
  ["an empty object", () => Buffer.from("{}"), 400, "MERCHANT_INVALID_ITEM_ID"],
  ["an item_id that is no UUID", () => Buffer.from(buyBody({ item_id: "not-a-uuid" })), 400, "MERCHANT_INVALID_ITEM_ID"],
  ["a max_price that is no number", () => Buffer.from(buyBody({ max_price: "12.50" })), 400, "MERCHANT_INVALID_MAX_PRICE"],
  ["a negative max_price", () => Buffer.from(buyBody({ max_price: -1 })), 400, "MERCHANT_INVALID_MAX_PRICE"],
  ["a max_price of 0", () => Buffer.from(buyBody({ max_price: 0 })), 400, "MERCHANT_INVALID_MAX_PRICE"],
  ["a max_price of -0", () => Buffer.from(buyBody({ max_price: 1000 }).replace("\"max_price\":1000", "\"max_price\":-0")), 400, "MERCHANT_INVALID_MAX_PRICE"],
  [
    "a max_price JSON.parse reads as 0, compared as written (1e-400)",
    () => Buffer.from(buyBody({ max_price: 1000 }).replace("\"max_price\":1000", "\"max_price\":1e-400")),
    409,
    "MERCHANT_PRICE_CHANGED"
  ],
  ["a custom_id too long", () => Buffer.from(buyBody({ custom_id: "x".repeat(101) })), 400, "MERCHANT_INVALID_CUSTOM_ID"],
  ["a trade URL that is not Steam's", () => Buffer.from(buyBody({ target_trade_url: "https://example.com/" })), 400, "MERCHANT_INVALID_TRADE_URL"],
  ["a SteamID64 that is not the trade URL's", () => Buffer.from(buyBody({ target_steam_id: "76561197960265729" })), 400, "MERCHANT_STEAM_ID_MISMATCH"],
  ["an unknown item", () => Buffer.from(buyBody({ item_id: randomUUID() })), 404, "MERCHANT_ITEM_NOT_FOUND"],
  ["a balance below the price (the merchant has none)", () => Buffer.from(buyBody({})), 402, "MERCHANT_INSUFFICIENT_BALANCE"]
]

describe("the fast handler answers what it takes with the HttpApi path's bytes", () => {
  for (const [what, body, status, code] of bodies) {
    it(`POST /buy: ${what}`, async () => {
      const bytes = body()
      const { viaFast, viaHttpApi } = await bothPaths("/buy", (m) => raw("POST", "/buy", m.apiKey, bytes))
      expect(comparable(viaFast)).toEqual(comparable(viaHttpApi))
      const { body: text, head } = comparable(viaFast)
      expect([head[0]!.split(" ")[1], field(JSON.parse(text), "error", "code")], text).toEqual([String(status), code])
    })
  }

  it.skipIf(!onPostgreSql)("GET /balance failing unexpectedly: 500 MERCHANT_INTERNAL_ERROR, logged", async () => {
    const pool = new pg.Pool({ connectionString: server.database.url, max: 1 })
    try {
      const { viaFast, viaHttpApi } = await bothPaths("/balance", async (m) => {
        // the merchant's balance row goes: both paths read it, and both meet a defect
        await pool.query("DELETE FROM balances WHERE merchant_id = $1", [m.id])
        return raw("GET", "/balance", m.apiKey)
      })
      expect(comparable(viaFast)).toEqual(comparable(viaHttpApi))
      expect(comparable(viaFast).head[0]).toBe("HTTP/1.1 500 Internal Server Error")
      expect(comparable(viaFast).body).toContain("MERCHANT_INTERNAL_ERROR")
      const logged = server.output().split("\n").filter((line) => line.includes("unhandled defect") && line.includes("\"logLevel\":\"ERROR\""))
      expect(logged.length).toBe(2)
    } finally {
      await pool.end()
    }
  })
})
