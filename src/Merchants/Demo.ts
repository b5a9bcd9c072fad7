/**
 * First start in embedded mode: create the `demo` merchant funded with 1000.00 USD (through the
 * real crediting path: 1010.10 USDT sent, 1 % commission) and save its credentials to
 * DATA_DIR/demo-merchant.json, with an invite to the merchant cabinet; print the start-up banner.
 */
import { Console, Effect, Layer, Option } from "effect"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { CabinetAccounts } from "../Cabinet/Accounts.js"
import { Settings } from "../Config.js"
import { Deposits } from "../Deposits/Deposits.js"
import { AdminToken } from "../Ops/AdminToken.js"
import { Merchants } from "./Merchants.js"

const DEMO_FUNDING_USDT = 1010.1
const DEMO_FUNDING_TX = "demo-initial-funding"

interface DemoMerchant {
  readonly apiKey: string
  readonly webhookSecret: string
  readonly invite: Option.Option<string>
}

const createDemoMerchant = Effect.gen(function*() {
  const merchants = yield* Merchants
  const deposits = yield* Deposits
  const settings = yield* Settings
  const accounts = yield* CabinetAccounts
  if (!(yield* merchants.noneYet)) return Option.none<DemoMerchant>()
  const maybeCreated = yield* merchants.create({ name: "demo", webhookUrl: null })
  if (Option.isNone(maybeCreated)) return Option.none<DemoMerchant>()
  const created = maybeCreated.value
  yield* deposits.credit({ merchantId: created.merchant.id, network: "tron", amount: DEMO_FUNDING_USDT, txId: DEMO_FUNDING_TX })
  const file = join(settings.dataDir, "demo-merchant.json")
  writeFileSync(
    file,
    JSON.stringify(
      {
        merchant_id: created.merchant.id,
        name: "demo",
        api_key: created.apiKey,
        webhook_secret: created.webhookSecret
      },
      null,
      2
    ) + "\n",
    { mode: 0o600 }
  )
  // the demo's way into the cabinet: an invite (72 h, single use; `cli merchant invite` makes another)
  const invite = yield* accounts.invite(created.merchant.id).pipe(Effect.map(Option.map((i) => i.inviteUrl)))
  return Option.some({ apiKey: created.apiKey, webhookSecret: created.webhookSecret, invite })
})

export const StartupBannerLive = Layer.effectDiscard(Effect.gen(function*() {
  const settings = yield* Settings
  const adminToken = yield* AdminToken
  const embedded = Option.isNone(settings.databaseUrl)
  const demo = embedded && settings.demoMerchant ? yield* createDemoMerchant.pipe(Effect.orDie) : Option.none()
  const api = `http://${settings.host}:${settings.port}`
  const lines = [
    "",
    "Merchant Purchasing API is running",
    `  API:   ${api}/api/v1/merchant`,
    `  Docs:  ${api}/docs  (OpenAPI: ${api}/api/v1/merchant/openapi.json)`,
    `  Merchant cabinet: ${settings.publicUrl}/cabinet`,
    `  Ops:   http://${settings.opsHost}:${settings.opsPort}  (/health /ready /metrics /ops/fibers /admin)`,
    `  Database: ${embedded ? `embedded PGlite in ${join(settings.dataDir, "pg")}` : "PostgreSQL (DATABASE_URL)"}`
  ]
  if (Option.isSome(adminToken.generatedNow)) {
    lines.push(`  Admin token (shown once, saved to ${join(settings.dataDir, "admin-token")}): ${adminToken.generatedNow.value}`)
  } else {
    lines.push(`  Admin token: ${Option.isSome(settings.adminToken) ? "ADMIN_TOKEN" : `in ${join(settings.dataDir, "admin-token")}`}`)
  }
  const demoFile = join(settings.dataDir, "demo-merchant.json")
  if (Option.isNone(demo) && embedded && existsSync(demoFile)) lines.push(`  Demo merchant \`demo\`: its API key and webhook secret are in ${demoFile}`)
  if (Option.isSome(demo)) {
    lines.push(
      `  Demo merchant \`demo\` created with 1000.00 USD (shown once, saved to ${join(settings.dataDir, "demo-merchant.json")}):`,
      `    API key:        ${demo.value.apiKey}`,
      `    Webhook secret: ${demo.value.webhookSecret}`,
      `  Try: curl -H "Authorization: Bearer ${demo.value.apiKey}" ${api}/api/v1/merchant/balance`
    )
    if (Option.isSome(demo.value.invite)) {
      lines.push(`  The demo's cabinet invite (72 h, single use): ${demo.value.invite.value}`)
    }
  }
  yield* Console.log(lines.join("\n") + "\n")
}))
