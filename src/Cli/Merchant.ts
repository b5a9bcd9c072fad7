/** `merchant ...`: create, list, show, block, unblock, deactivate, rotate the key or the webhook secret, invite. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option, Schema } from "effect"
import {
  ApiKeyIssued,
  CreatedMerchant,
  CreateMerchant,
  InviteIssued,
  MerchantList,
  MerchantListQuery,
  MerchantView,
  WebhookSecretIssued
} from "../Ops/AdminApi.js"
import { call, checked, CliFailure, connection, connectionOptions, lines, report, show } from "./Admin.js"

const merchantLines = (title: string, m: typeof MerchantView.Type) =>
  lines(title, [
    ["id", m.merchant_id],
    ["name", m.name],
    ["status", m.status],
    ["webhook_url", show(m.webhook_url)],
    ["deposit addresses", `trc20 ${show(m.deposit_addresses.trc20)}, bep20 ${show(m.deposit_addresses.bep20)}`],
    ["created_at", m.created_at],
    ["updated_at", m.updated_at]
  ])

export const merchantIdArg = Args.text({ name: "MERCHANT_ID" }).pipe(Args.withDescription("the merchant's id (merchant_id)"))

const merchantCreate = Command.make("create", {
  ...connectionOptions,
  name: Args.text({ name: "NAME" }).pipe(Args.withDescription("the merchant's unique name")),
  webhookUrl: Options.text("webhook-url").pipe(Options.withDescription("http(s) URL receiving webhooks"), Options.optional)
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const payload = yield* checked(CreateMerchant, { name: flags.name, webhook_url: Option.getOrNull(flags.webhookUrl) })
    const answer = yield* call(conn, (client) => client.merchants.createMerchant({ payload }))
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

const merchantShow = Command.make("show", {
  ...connectionOptions,
  merchant: Args.text({ name: "MERCHANT" }).pipe(Args.withDescription("the merchant's id, or its exact name"))
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const byId = Schema.is(Schema.UUID)(flags.merchant)
    const answer = byId
      ? yield* call(conn, (client) => client.merchants.getMerchant({ path: { id: flags.merchant } }))
      : yield* call(conn, (client) => client.merchants.listMerchants({ urlParams: { name: flags.merchant, limit: 200 } })).pipe(
        Effect.map((page) => page.merchants.find((m) => m.name === flags.merchant)),
        Effect.flatMap((found) =>
          found === undefined
            ? Effect.fail(new CliFailure({ message: `ADMIN_NOT_FOUND: no merchant named ${JSON.stringify(flags.merchant)}` }))
            : Effect.succeed(found)
        )
      )
    yield* report(conn, answer, MerchantView, (m) => merchantLines(`merchant ${m.name}`, m))
  })).pipe(Command.withDescription("show a merchant (without key or secret), by id or by name"))

const merchantList = Command.make("list", {
  ...connectionOptions,
  name: Options.text("name").pipe(Options.withDescription("only names containing this text (any case)"), Options.optional),
  after: Options.text("after").pipe(Options.withDescription("the next page: the last name of the page before"), Options.optional),
  limit: Options.integer("limit").pipe(Options.withDescription("merchants a page, 1 to 200 (default: 50)"), Options.withDefault(50))
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const urlParams = yield* checked(MerchantListQuery, {
      name: Option.getOrUndefined(flags.name),
      after: Option.getOrUndefined(flags.after),
      limit: String(flags.limit)
    })
    const answer = yield* call(conn, (client) => client.merchants.listMerchants({ urlParams }))
    yield* report(conn, answer, MerchantList, (page) => {
      if (page.merchants.length === 0) return "no merchants"
      const width = Math.max(...page.merchants.map((m) => m.name.length), 4)
      return [
        `${"NAME".padEnd(width)}  ${"STATUS".padEnd(8)}  ID`,
        ...page.merchants.map((m) => `${m.name.padEnd(width)}  ${m.status.padEnd(8)}  ${m.merchant_id}`),
        ...(page.next_after === null ? [] : [`more: npm run cli -- merchant list --after ${JSON.stringify(page.next_after)}`])
      ].join("\n")
    })
  })).pipe(Command.withDescription("list merchants by name (A to Z), optionally those whose name contains --name"))

const setStatus = (name: string, status: "active" | "blocked" | "inactive", description: string) =>
  Command.make(name, { ...connectionOptions, merchantId: merchantIdArg }, (flags) =>
    Effect.gen(function*() {
      const conn = yield* connection(flags)
      const answer = yield* call(conn, (client) => client.merchants.updateMerchant({ path: { id: flags.merchantId }, payload: { status } }))
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
    const answer = yield* call(conn, (client) => client.merchants.rotateApiKey({ path: { id: flags.merchantId } }))
    yield* report(conn, answer, ApiKeyIssued, (body) =>
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
    Options.withDescription("seconds the replaced secret still signs deliveries (X-Signature-Previous), 0 to 604800 (default: 0, none)"),
    Options.withDefault(0)
  )
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, (client) => client.merchants.rotateWebhookSecret({ path: { id: flags.merchantId } }), {
      optionalBody: { previous_valid_seconds: flags.keepPrevious }
    })
    yield* report(conn, answer, WebhookSecretIssued, (body) =>
      [
        `new webhook secret for merchant ${flags.merchantId}:`,
        `  ${body.webhook_secret}`,
        flags.keepPrevious > 0
          ? `Webhooks are signed with it from now on; the previous secret also signs them (X-Signature-Previous) for ${flags.keepPrevious} s.`
          : "Webhooks are signed with it from now on; the previous secret has stopped.",
        "This secret is shown only now."
      ].join("\n"))
  })).pipe(Command.withDescription("issue a new webhook signing secret, optionally keeping the previous one for a while"))

const merchantInvite = Command.make("invite", { ...connectionOptions, merchantId: merchantIdArg }, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, (client) => client.merchants.inviteMerchant({ path: { id: flags.merchantId } }))
    yield* report(conn, answer, InviteIssued, (body) =>
      [
        `cabinet invite for merchant ${flags.merchantId} (single use, until ${body.expires_at}):`,
        `  ${body.invite_url}`,
        "Any earlier unused invite of this merchant no longer works. Send the link over a channel you trust."
      ].join("\n"))
  })).pipe(Command.withDescription("invite a merchant to the cabinet: a single-use link to set a login, password and second factor"))

export const merchant = Command.make("merchant").pipe(
  Command.withDescription("manage merchants"),
  Command.withSubcommands([
    merchantCreate,
    merchantList,
    merchantShow,
    merchantBlock,
    merchantUnblock,
    merchantDeactivate,
    merchantRotateKey,
    merchantRotateWebhookSecret,
    merchantInvite
  ])
)
