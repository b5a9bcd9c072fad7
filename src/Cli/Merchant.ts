/** `merchant ...`: create, show, block, unblock, deactivate, rotate the key or the webhook secret. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option, Schema } from "effect"
import { call, connection, connectionOptions, id, lines, report, show } from "./Admin.js"

// Answer shapes: only what the summaries print; unknown fields are ignored.
const CreatedMerchant = Schema.Struct({
  merchant_id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  api_key: Schema.String,
  webhook_secret: Schema.String,
  webhook_url: Schema.NullOr(Schema.String)
})

const MerchantView = Schema.Struct({
  merchant_id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  webhook_url: Schema.NullOr(Schema.String),
  deposit_addresses: Schema.optional(Schema.Struct({
    trc20: Schema.NullOr(Schema.String),
    bep20: Schema.NullOr(Schema.String)
  })),
  created_at: Schema.optional(Schema.String),
  updated_at: Schema.optional(Schema.String)
})

const merchantLines = (title: string, m: typeof MerchantView.Type) =>
  lines(title, [
    ["id", m.merchant_id],
    ["name", m.name],
    ["status", m.status],
    ["webhook_url", show(m.webhook_url)],
    ...(m.deposit_addresses !== undefined
      ? [["deposit addresses", `trc20 ${show(m.deposit_addresses.trc20)}, bep20 ${show(m.deposit_addresses.bep20)}`] as const]
      : []),
    ...(m.created_at !== undefined ? [["created_at", m.created_at] as const] : []),
    ...(m.updated_at !== undefined ? [["updated_at", m.updated_at] as const] : [])
  ])

export const merchantIdArg = Args.text({ name: "MERCHANT_ID" }).pipe(Args.withDescription("the merchant's id (merchant_id)"))

const merchantCreate = Command.make("create", {
  ...connectionOptions,
  name: Args.text({ name: "NAME" }).pipe(Args.withDescription("the merchant's unique name")),
  webhookUrl: Options.text("webhook-url").pipe(Options.withDescription("http(s) URL receiving webhooks"), Options.optional)
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, "POST", "/admin/merchants", {
      name: flags.name,
      webhook_url: Option.getOrNull(flags.webhookUrl)
    })
    yield* report(conn, answer, CreatedMerchant, (m) =>
      [
        lines(`created merchant ${m.name}`, [
          ["id", m.merchant_id],
          ["status", m.status],
          ["webhook_url", show(m.webhook_url)],
          ["api_key", m.api_key],
          ["webhook_secret", m.webhook_secret]
        ]),
        "The API key and webhook secret are shown only now: store them safely."
      ].join("\n"))
  })).pipe(Command.withDescription("create a merchant; prints its API key and webhook secret once"))

const merchantShow = Command.make("show", { ...connectionOptions, merchantId: merchantIdArg }, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, "GET", `/admin/merchants/${id(flags.merchantId)}`)
    yield* report(conn, answer, MerchantView, (m) => merchantLines(`merchant ${m.name}`, m))
  })).pipe(Command.withDescription("show a merchant (without key or secret)"))

const setStatus = (name: string, status: "active" | "blocked" | "inactive", description: string) =>
  Command.make(name, { ...connectionOptions, merchantId: merchantIdArg }, (flags) =>
    Effect.gen(function*() {
      const conn = yield* connection(flags)
      const answer = yield* call(conn, "PATCH", `/admin/merchants/${id(flags.merchantId)}`, { status })
      yield* report(conn, answer, MerchantView, (m) => `merchant ${m.name} (${m.merchant_id}) is now ${m.status}`)
    })).pipe(Command.withDescription(description))

const merchantBlock = setStatus("block", "blocked", "block a merchant: 403 MERCHANT_BLOCKED on every merchant endpoint")
const merchantUnblock = setStatus("unblock", "active", "make a merchant active again")
const merchantDeactivate = setStatus(
  "deactivate",
  "inactive",
  "deactivate a merchant: reads still work, purchases and wallet changes get 403 MERCHANT_NOT_ACTIVE"
)

const merchantRotateKey = Command.make("rotate-key", { ...connectionOptions, merchantId: merchantIdArg }, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, "POST", `/admin/merchants/${id(flags.merchantId)}/api-key`)
    yield* report(conn, answer, Schema.Struct({ api_key: Schema.String }), (body) =>
      [
        `new API key for merchant ${flags.merchantId}:`,
        `  ${body.api_key}`,
        "The previous key has stopped working. This key is shown only now."
      ].join("\n"))
  })).pipe(Command.withDescription("issue a new API key; the previous one stops working at once"))

const merchantRotateWebhookSecret = Command.make("rotate-webhook-secret", {
  ...connectionOptions,
  merchantId: merchantIdArg,
  keepPrevious: Options.integer("keep-previous").pipe(
    Options.withDescription("seconds the replaced secret still signs deliveries (X-Signature-Previous), 0 to 604800"),
    Options.withDefault(0)
  )
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, "POST", `/admin/merchants/${id(flags.merchantId)}/webhook-secret`, {
      previous_valid_seconds: flags.keepPrevious
    })
    yield* report(conn, answer, Schema.Struct({ webhook_secret: Schema.String }), (body) =>
      [
        `new webhook secret for merchant ${flags.merchantId}:`,
        `  ${body.webhook_secret}`,
        flags.keepPrevious > 0
          ? `Webhooks are signed with it from now on; the previous secret also signs them (X-Signature-Previous) for ${flags.keepPrevious} s.`
          : "Webhooks are signed with it from now on; the previous secret has stopped.",
        "This secret is shown only now."
      ].join("\n"))
  })).pipe(Command.withDescription("issue a new webhook signing secret, optionally keeping the previous one for a while"))

export const merchant = Command.make("merchant").pipe(
  Command.withDescription("manage merchants"),
  Command.withSubcommands([
    merchantCreate,
    merchantShow,
    merchantBlock,
    merchantUnblock,
    merchantDeactivate,
    merchantRotateKey,
    merchantRotateWebhookSecret
  ])
)
