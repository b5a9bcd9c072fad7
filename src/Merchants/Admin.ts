/**
 * Merchants on the admin API (CONTRACT 2): creation (the key and webhook secret are shown only
 * then), reading, status and webhook URL changes, key and webhook secret rotation, and the earlier
 * provider's deposit addresses, and invites to the merchant cabinet.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { CabinetAccounts } from "../Cabinet/Accounts.js"
import type { Merchant } from "../Domain/Merchant.js"
import { AdminApi, AdminConflict, RotateWebhookSecret } from "../Ops/AdminApi.js"
import { found, optionalBody, storable } from "../Ops/AdminHttp.js"
import { Merchants } from "./Merchants.js"

export const merchantView = (m: Merchant) => ({
  merchant_id: m.id,
  name: m.name,
  status: m.status,
  webhook_url: m.webhookUrl,
  deposit_addresses: { trc20: m.legacyTrc20, bep20: m.legacyBep20 },
  created_at: m.createdAt.toISOString(),
  updated_at: m.updatedAt.toISOString()
})

export const AdminMerchantsHttp = HttpApiBuilder.group(AdminApi, "merchants", (handlers) =>
  Effect.gen(function*() {
    const merchants = yield* Merchants
    const accounts = yield* CabinetAccounts
    return handlers
      .handle("createMerchant", ({ payload }) =>
        Effect.gen(function*() {
          const input = yield* storable(payload)
          const created = yield* merchants.create({ name: input.name, webhookUrl: input.webhook_url }).pipe(
            Effect.flatMap(Option.match({
              onNone: () => Effect.fail(new AdminConflict({ message: `merchant name ${input.name} is taken` })),
              onSome: Effect.succeed
            }))
          )
          return {
            merchant_id: created.merchant.id,
            name: created.merchant.name,
            status: created.merchant.status,
            api_key: created.apiKey,
            webhook_secret: created.webhookSecret,
            webhook_url: created.merchant.webhookUrl
          }
        }))
      .handle("listMerchants", ({ urlParams }) =>
        storable(urlParams).pipe(
          Effect.flatMap((q) => merchants.list({ name: q.name, after: q.after, limit: q.limit ?? 50 })),
          Effect.map((page) => ({ merchants: page.merchants.map(merchantView), next_after: page.nextAfter }))
        ))
      .handle("getMerchant", ({ path }) => merchants.get(path.id).pipe(Effect.flatMap(found("merchant")), Effect.map(merchantView)))
      .handle("updateMerchant", ({ path, payload }) =>
        storable(payload).pipe(
          Effect.flatMap((changes) => merchants.update(path.id, { status: changes.status, webhookUrl: changes.webhook_url })),
          Effect.flatMap(found("merchant")),
          Effect.map(merchantView)
        ))
      .handle("rotateApiKey", ({ path }) =>
        merchants.rotateApiKey(path.id).pipe(Effect.flatMap(found("merchant")), Effect.map((apiKey) => ({ api_key: apiKey }))))
      .handle("rotateWebhookSecret", ({ path }) =>
        optionalBody(RotateWebhookSecret).pipe(
          Effect.flatMap((input) =>
            merchants.rotateWebhookSecret(path.id, input.previous_valid_seconds)
          ),
          Effect.flatMap(found("merchant")),
          Effect.map((secret) => ({ webhook_secret: secret }))
        ))
      .handle("inviteMerchant", ({ path }) =>
        accounts.invite(path.id).pipe(
          Effect.flatMap(found("merchant")),
          Effect.map((invite) => ({ invite_url: invite.inviteUrl, expires_at: invite.expiresAt.toISOString() }))
        ))
      .handle("setLegacyAddresses", ({ path, payload }) =>
        storable(payload).pipe(
          Effect.flatMap((addresses) => merchants.setLegacyAddresses(path.id, addresses)),
          Effect.flatMap(found("merchant")),
          Effect.map(merchantView)
        ))
  }))
