/**
 * The admin API of the ops listener (CONTRACT 2), all under `Authorization: Bearer <ADMIN_TOKEN>`,
 * errors in the spec's Error shape. Handlers only decode, call services and shape answers.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { ChangeLog } from "../Catalogue/ChangeLog.js"
import { CatalogueEngine } from "../Catalogue/Engine.js"
import { WalletAdminRoutes } from "../Deposits/Admin.js"
import { DepositAmountInvalid, Deposits } from "../Deposits/Deposits.js"
import { CatalogItemInput } from "../Domain/CatalogItem.js"
import { errorBody } from "../Domain/Errors.js"
import type { Merchant } from "../Domain/Merchant.js"
import { MerchantStatus } from "../Domain/Merchant.js"
import { toUnits } from "../Domain/Money.js"
import { Merchants } from "../Merchants/Merchants.js"
import { WebhookAdminRoutes } from "../Webhooks/Admin.js"
import { AdminError, body, found, invalid, json, notFound, optionalBody, pathId } from "./AdminHttp.js"
import { AdminToken } from "./AdminToken.js"

const WebhookUrl = Schema.NullOr(Schema.String.pipe(
  Schema.maxLength(2048),
  Schema.filter((s) => {
    try {
      const url = new URL(s)
      return url.protocol === "https:" || url.protocol === "http:"
    } catch {
      return false
    }
  }, { message: () => "webhook_url must be an http(s) URL" })
))

const CreateMerchant = Schema.Struct({
  // a name is shown in tables, logs and the CLI: one line of printable text
  name: Schema.String.pipe(
    Schema.trimmed(),
    Schema.minLength(1),
    Schema.maxLength(100),
    Schema.filter((name) => !/\p{Cc}/u.test(name) || "name must not contain control characters (line breaks, tabs)")
  ),
  webhook_url: Schema.optionalWith(WebhookUrl, { default: () => null })
})
const PatchMerchant = Schema.Struct({
  status: Schema.optional(MerchantStatus),
  webhook_url: Schema.optional(WebhookUrl)
})
/** How long the replaced secret still signs deliveries (X-Signature-Previous): up to a week (CONTRACT 4). */
const RotateWebhookSecret = Schema.Struct({
  previous_valid_seconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 604_800)), { default: () => 0 })
})
const LegacyAddresses = Schema.Struct({
  trc20: Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128))),
  bep20: Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128)))
})
const SimulatedDeposit = Schema.Struct({
  merchant_id: Schema.UUID,
  network: Schema.Literal("tron", "bsc"),
  amount: Schema.Number,
  tx_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
})

const CatalogueItems = Schema.Struct({
  items: Schema.Array(CatalogItemInput.pipe(Schema.filter((item) => toUnits(item.price, 2) !== undefined || "price must have at most two decimals")))
})

export const merchantView = (m: Merchant) => ({
  merchant_id: m.id,
  name: m.name,
  status: m.status,
  webhook_url: m.webhookUrl,
  deposit_addresses: { trc20: m.legacyTrc20, bep20: m.legacyBep20 },
  created_at: m.createdAt.toISOString(),
  updated_at: m.updatedAt.toISOString()
})

export const AdminRoutes = Effect.gen(function*() {
  const merchants = yield* Merchants
  const deposits = yield* Deposits
  const adminToken = yield* AdminToken
  const changeLog = yield* ChangeLog
  const engine = yield* CatalogueEngine
  const webhookRoutes = yield* WebhookAdminRoutes
  const walletRoutes = yield* WalletAdminRoutes

  const routes = HttpRouter.empty.pipe(
    HttpRouter.post(
      "/admin/merchants",
      Effect.gen(function*() {
        const input = yield* body(CreateMerchant)
        const created = yield* merchants.create({ name: input.name, webhookUrl: input.webhook_url }).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new AdminError({ status: 409, code: "ADMIN_CONFLICT", message: `merchant name ${input.name} is taken` })),
            onSome: Effect.succeed
          }))
        )
        return json({
          merchant_id: created.merchant.id,
          name: created.merchant.name,
          status: created.merchant.status,
          api_key: created.apiKey,
          webhook_secret: created.webhookSecret,
          webhook_url: created.merchant.webhookUrl
        }, 201)
      })
    ),
    HttpRouter.get(
      "/admin/merchants/:id",
      Effect.gen(function*() {
        const merchant = yield* pathId.pipe(Effect.flatMap(merchants.get), Effect.flatMap(found("merchant")))
        return json(merchantView(merchant))
      })
    ),
    HttpRouter.patch(
      "/admin/merchants/:id",
      Effect.gen(function*() {
        const id = yield* pathId
        const changes = yield* body(PatchMerchant)
        const merchant = yield* merchants.update(id, { status: changes.status, webhookUrl: changes.webhook_url }).pipe(
          Effect.flatMap(found("merchant"))
        )
        return json(merchantView(merchant))
      })
    ),
    HttpRouter.post(
      "/admin/merchants/:id/api-key",
      Effect.gen(function*() {
        const apiKey = yield* pathId.pipe(Effect.flatMap(merchants.rotateApiKey), Effect.flatMap(found("merchant")))
        return json({ api_key: apiKey }, 201)
      })
    ),
    HttpRouter.post(
      "/admin/merchants/:id/webhook-secret",
      Effect.gen(function*() {
        const id = yield* pathId
        const input = yield* optionalBody(RotateWebhookSecret)
        const secret = yield* merchants.rotateWebhookSecret(id, input.previous_valid_seconds).pipe(Effect.flatMap(found("merchant")))
        return json({ webhook_secret: secret }, 201)
      })
    ),
    HttpRouter.put(
      "/admin/merchants/:id/legacy-addresses",
      Effect.gen(function*() {
        const id = yield* pathId
        const addresses = yield* body(LegacyAddresses)
        const merchant = yield* merchants.setLegacyAddresses(id, addresses).pipe(Effect.flatMap(found("merchant")))
        return json(merchantView(merchant))
      })
    ),
    HttpRouter.post(
      "/admin/deposits",
      Effect.gen(function*() {
        const input = yield* body(SimulatedDeposit)
        const deposit = yield* deposits.credit({
          merchantId: input.merchant_id,
          network: input.network,
          amount: input.amount,
          txId: input.tx_id
        }).pipe(Effect.catchTags({
          DepositMerchantNotFound: () => Effect.fail(notFound("merchant")),
          DepositAmountInvalid: (e: DepositAmountInvalid) => Effect.fail(invalid(e.message)),
          DepositTxIdConflict: (e) =>
            Effect.fail(
              new AdminError({ status: 409, code: "ADMIN_CONFLICT", message: `tx_id ${e.txId} was credited with another merchant, network or amount` })
            )
        }))
        return json(deposit, 201)
      })
    ),
    HttpRouter.put(
      "/admin/catalogue/items",
      Effect.gen(function*() {
        const input = yield* body(CatalogueItems)
        const writes = input.items.map(({ sim, id, has_stickers, stickers_count, ...item }) => ({
          op: "upsert" as const,
          listing: {
            item: {
              ...item,
              id: (id ?? randomUUID()).toLowerCase(),
              has_stickers: has_stickers ?? item.stickers.length > 0,
              stickers_count: stickers_count ?? item.stickers.length
            },
            providerPriceCents: Math.floor(Number(toUnits(item.price, 2)) * 100 / 107),
            sim
          }
        }))
        yield* changeLog.apply(writes, "admin")
        // this node answers reads of what it just wrote
        yield* engine.refresh
        return json({ upserted: writes.length, ids: writes.map((w) => w.listing.item.id) })
      })
    ),
    HttpRouter.del(
      "/admin/catalogue/items/:id",
      Effect.gen(function*() {
        const id = yield* pathId
        if (!Schema.is(Schema.UUID)(id)) return yield* notFound("item")
        const removed = yield* changeLog.apply([{ op: "remove", id }], "admin")
        if (removed === 0) return yield* notFound("active item")
        yield* engine.refresh
        return HttpServerResponse.empty({ status: 204 })
      })
    ),
    HttpRouter.concat(webhookRoutes),
    HttpRouter.concat(walletRoutes)
  )

  /** Every admin route checks the token first; admin errors become the spec's Error body. */
  return routes.pipe(
    HttpRouter.use((app) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        if (!adminToken.verify(request.headers["authorization"])) {
          return yield* new AdminError({ status: 401, code: "ADMIN_UNAUTHORIZED", message: "admin token required" })
        }
        return yield* app
      }).pipe(
        Effect.catchTag("AdminError", (e) =>
          Effect.succeed(HttpServerResponse.text(errorBody(e.code, e.message), { status: e.status, contentType: "application/json" })))
      )
    )
  )
})
