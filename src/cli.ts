/**
 * The operator CLI (CONTRACT 2): `npm run cli -- <command>` wraps the admin API of the ops
 * listener over HTTP. Every command takes `--json` (print the raw response body) and otherwise
 * prints a short summary; an answer other than 2xx prints its error code and message on stderr
 * and exits with 1.
 *
 * Connection options, accepted before the command (`cli --ops-url X merchant show ID`) or on the
 * command itself (`cli merchant show ID --ops-url X`), the latter winning:
 * - `--ops-url`: else OPS_URL, else http://127.0.0.1:9090
 * - `--admin-token`: else ADMIN_TOKEN, else the file DATA_DIR/admin-token (DATA_DIR: ./data)
 */
// Module paths rather than the packages' indexes: a CLI run loads only what it uses.
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Path from "@effect/platform/Path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Console, Data, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"

/** A failure already worded for the operator; printed on stderr, exit code 1. */
class CliFailure extends Data.TaggedError("CliFailure")<{ readonly message: string }> {}

const DEFAULT_OPS_URL = "http://127.0.0.1:9090"
const REQUEST_TIMEOUT = Duration.seconds(60)

// ---------------------------------------------------------------------------------------------
// Connection options

const connectionOptions = {
  json: Options.boolean("json").pipe(Options.withDescription("print the raw JSON response instead of a summary")),
  opsUrl: Options.text("ops-url").pipe(
    Options.withDescription(`ops listener base URL (default: env OPS_URL, else ${DEFAULT_OPS_URL})`),
    Options.optional
  ),
  adminToken: Options.redacted("admin-token").pipe(
    Options.withDescription("admin bearer token (default: env ADMIN_TOKEN, else the file DATA_DIR/admin-token)"),
    Options.optional
  )
}

interface ConnectionFlags {
  readonly json: boolean
  readonly opsUrl: Option.Option<string>
  readonly adminToken: Option.Option<Redacted.Redacted>
}

/** The root command: its options apply to every command given after it. */
const root = Command.make("cli", connectionOptions).pipe(
  Command.withDescription("Operator CLI for the merchant purchasing service: wraps the admin API of the ops listener.")
)

interface Connection {
  readonly json: boolean
  readonly opsUrl: string
  readonly token: Redacted.Redacted
}

/** The admin token when neither the option nor ADMIN_TOKEN gives one: DATA_DIR/admin-token. */
const tokenFromFile = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dataDir = yield* Config.string("DATA_DIR").pipe(Config.withDefault("./data"))
  const file = path.join(dataDir, "admin-token")
  const text = yield* fs.readFileString(file).pipe(
    Effect.mapError(() =>
      new CliFailure({ message: `no admin token: pass --admin-token, set ADMIN_TOKEN, or create ${file}` })
    )
  )
  const token = text.trim()
  if (token === "") return yield* new CliFailure({ message: `the admin token file ${file} is empty` })
  return Redacted.make(token)
})

/** Resolves the connection: the command's flags, then the root's, then the environment. */
const connection = (flags: ConnectionFlags) =>
  Effect.gen(function*() {
    const global = yield* root
    const fromEnv = {
      opsUrl: Config.string("OPS_URL").pipe(Config.withDefault(DEFAULT_OPS_URL)),
      token: Config.option(Config.redacted("ADMIN_TOKEN"))
    }
    const opsUrl = Option.isSome(flags.opsUrl)
      ? flags.opsUrl.value
      : Option.isSome(global.opsUrl) ? global.opsUrl.value : yield* fromEnv.opsUrl
    const explicitToken = Option.orElse(flags.adminToken, () => global.adminToken)
    const token = Option.isSome(explicitToken)
      ? explicitToken.value
      : yield* fromEnv.token.pipe(Effect.flatMap(Option.match({ onSome: Effect.succeed, onNone: () => tokenFromFile })))
    const base = opsUrl.trim().replace(/\/+$/, "")
    if (!/^https?:\/\/[^/]/.test(base)) {
      return yield* new CliFailure({ message: `--ops-url must be an http(s) URL, got ${JSON.stringify(opsUrl)}` })
    }
    return { json: flags.json || global.json, opsUrl: base, token } satisfies Connection
  }).pipe(
    Effect.catchTag("ConfigError", (e) => Effect.fail(new CliFailure({ message: `bad environment: ${e.message}` })))
  )

// ---------------------------------------------------------------------------------------------
// Calling the admin API

interface Answer {
  readonly status: number
  readonly text: string
}

const ErrorBody = Schema.parseJson(Schema.Struct({ error: Schema.Struct({ code: Schema.String, message: Schema.String }) }))
const ProblemBody = Schema.parseJson(Schema.Struct({
  title: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String)
}))

/** The operator's words for a non-2xx answer: the spec's Error body when there is one. */
const describeFailure = (answer: Answer): string =>
  Option.match(Schema.decodeUnknownOption(ErrorBody)(answer.text), {
    onSome: (body) => `${body.error.code} (HTTP ${answer.status}): ${body.error.message}`,
    onNone: () =>
      Option.match(Schema.decodeUnknownOption(ProblemBody)(answer.text), {
        onSome: (p) => `HTTP ${answer.status}: ${[p.title, p.detail].filter((s) => s !== undefined).join(": ") || answer.text}`,
        onNone: () => `HTTP ${answer.status}${answer.text.trim() === "" ? "" : `: ${answer.text.trim().slice(0, 500)}`}`
      })
  })

/** One admin request; a 2xx answer's body, or a CliFailure for anything else. */
const call = (conn: Connection, method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, body?: unknown) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const url = conn.opsUrl + path
    let request = HttpClientRequest.make(method)(url).pipe(
      HttpClientRequest.bearerToken(Redacted.value(conn.token)),
      HttpClientRequest.acceptJson
    )
    if (body !== undefined) request = HttpClientRequest.bodyUnsafeJson(request, body)
    const answer = yield* client.execute(request).pipe(
      Effect.flatMap((response) => Effect.map(response.text, (text): Answer => ({ status: response.status, text }))),
      Effect.scoped,
      Effect.timeoutFail({
        duration: REQUEST_TIMEOUT,
        onTimeout: () => new CliFailure({ message: `${method} ${url}: no answer within ${Duration.format(REQUEST_TIMEOUT)}` })
      }),
      Effect.catchTags({
        RequestError: (e) => Effect.fail(new CliFailure({ message: `cannot reach the ops listener at ${conn.opsUrl}: ${e.cause ?? e.message}` })),
        ResponseError: (e) => Effect.fail(new CliFailure({ message: `${method} ${url}: ${e.message}` }))
      })
    )
    if (answer.status < 200 || answer.status >= 300) return yield* new CliFailure({ message: describeFailure(answer) })
    return answer
  })

/**
 * Prints a successful answer: the raw body with --json, else `summary` of the decoded body
 * (falling back to the raw body when it is not the expected shape).
 */
const report = <A, I>(conn: Connection, answer: Answer, schema: Schema.Schema<A, I>, summary: (body: A) => string) =>
  conn.json
    ? (answer.text === "" ? Effect.void : Console.log(answer.text))
    : Option.match(Schema.decodeUnknownOption(Schema.parseJson(schema))(answer.text), {
      onSome: (body) => Console.log(summary(body)),
      onNone: () => Console.log(answer.text === "" ? `done (HTTP ${answer.status})` : answer.text)
    })

const show = (value: string | null | undefined) => value === null || value === undefined || value === "" ? "-" : value

/** `  label: value` lines, labels aligned. */
const lines = (title: string, fields: ReadonlyArray<readonly [string, string]>) => {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1
  return [title, ...fields.map(([label, value]) => `  ${(label + ":").padEnd(width)} ${value}`)].join("\n")
}

const id = (segment: string) => encodeURIComponent(segment)

// ---------------------------------------------------------------------------------------------
// Answer shapes (only what the summaries print; unknown fields are ignored)

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

const DepositItem = Schema.Struct({
  id: Schema.String,
  amount: Schema.Number,
  currency: Schema.String,
  network: Schema.NullOr(Schema.String),
  tx_id: Schema.NullOr(Schema.String),
  status: Schema.String
})

// ---------------------------------------------------------------------------------------------
// merchant ...

const merchantIdArg = Args.text({ name: "MERCHANT_ID" }).pipe(Args.withDescription("the merchant's id (merchant_id)"))

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

const merchantRotateWebhookSecret = Command.make(
  "rotate-webhook-secret",
  { ...connectionOptions, merchantId: merchantIdArg },
  (flags) =>
    Effect.gen(function*() {
      const conn = yield* connection(flags)
      const answer = yield* call(conn, "POST", `/admin/merchants/${id(flags.merchantId)}/webhook-secret`)
      yield* report(conn, answer, Schema.Struct({ webhook_secret: Schema.String }), (body) =>
        [
          `new webhook secret for merchant ${flags.merchantId}:`,
          `  ${body.webhook_secret}`,
          "Webhooks are signed with it from now on. This secret is shown only now."
        ].join("\n"))
    })
).pipe(Command.withDescription("issue a new webhook signing secret"))

const merchant = Command.make("merchant").pipe(
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

// ---------------------------------------------------------------------------------------------
// deposit simulate

const usdtAmount = Args.text({ name: "AMOUNT" }).pipe(
  Args.withDescription("USDT sent, e.g. 102.50 (at most 6 decimals)"),
  Args.mapEffect((text) =>
    /^\d+(\.\d{1,6})?$/.test(text) && Number(text) > 0
      ? Effect.succeed(Number(text))
      : Effect.fail(HelpDoc.p(`AMOUNT must be a positive number of USDT with at most 6 decimals, got ${JSON.stringify(text)}`))
  )
)

const depositSimulate = Command.make("simulate", {
  ...connectionOptions,
  merchantId: merchantIdArg,
  amount: usdtAmount,
  network: Options.choice("network", ["tron", "bsc"]).pipe(
    Options.withDescription("the network the USDT came over"),
    Options.withDefault("tron" as const)
  ),
  txId: Options.text("tx-id").pipe(
    Options.withDescription("the provider's transaction id; the same one twice credits once"),
    Options.optional
  )
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, "POST", "/admin/deposits", {
      merchant_id: flags.merchantId,
      network: flags.network,
      amount: flags.amount,
      ...Option.match(flags.txId, { onNone: () => ({}), onSome: (txId) => ({ tx_id: txId }) })
    })
    yield* report(conn, answer, DepositItem, (d) =>
      lines(`credited ${d.amount.toFixed(2)} ${d.currency} to merchant ${flags.merchantId}`, [
        ["deposit", d.id],
        ["sent", `${flags.amount} USDT over ${show(d.network)}`],
        ["tx_id", show(d.tx_id)],
        ["status", d.status]
      ]))
  })).pipe(Command.withDescription("credit a confirmed provider payment through the real crediting path"))

const deposit = Command.make("deposit").pipe(
  Command.withDescription("deposits"),
  Command.withSubcommands([depositSimulate])
)

// ---------------------------------------------------------------------------------------------
// catalogue load

const catalogueLoad = Command.make("load", {
  ...connectionOptions,
  file: Args.file({ name: "FILE", exists: "yes" }).pipe(
    Args.withDescription("a JSON file holding an array of CatalogItem-shaped objects (or {\"items\": [...]})")
  )
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(flags.file).pipe(
      Effect.mapError((e) => new CliFailure({ message: `cannot read ${flags.file}: ${e.message}` }))
    )
    const parsed = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) => new CliFailure({ message: `${flags.file} is not JSON: ${e instanceof Error ? e.message : String(e)}` })
    })
    const items = Array.isArray(parsed)
      ? parsed
      : typeof parsed === "object" && parsed !== null && Array.isArray((parsed as { items?: unknown }).items)
      ? (parsed as { items: Array<unknown> }).items
      : undefined
    if (items === undefined) {
      return yield* new CliFailure({ message: `${flags.file} must hold a JSON array of catalogue items` })
    }
    const answer = yield* call(conn, "PUT", "/admin/catalogue/items", { items })
    yield* report(conn, answer, Schema.Struct({ upserted: Schema.Number }), (body) =>
      `upserted ${body.upserted} catalogue item${body.upserted === 1 ? "" : "s"} from ${flags.file}`)
  })).pipe(Command.withDescription("upsert catalogue items through the supplier-sync path"))

const catalogue = Command.make("catalogue").pipe(
  Command.withDescription("the catalogue"),
  Command.withSubcommands([catalogueLoad])
)

// ---------------------------------------------------------------------------------------------
// webhook replay

const webhookReplay = Command.make("replay", {
  ...connectionOptions,
  eventId: Args.text({ name: "EVENT_ID" }).pipe(Args.withDescription("the event_id to deliver again"))
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const answer = yield* call(conn, "POST", `/admin/webhook-events/${id(flags.eventId)}/replay`)
    if (conn.json) return yield* report(conn, answer, Schema.Unknown, () => "")
    yield* Console.log(`replay of webhook event ${flags.eventId} queued (same event_id; delivery_attempts grows)`)
  })).pipe(Command.withDescription("deliver a webhook event again (support replay)"))

const webhook = Command.make("webhook").pipe(
  Command.withDescription("webhooks"),
  Command.withSubcommands([webhookReplay])
)

// ---------------------------------------------------------------------------------------------
// main

const cli = root.pipe(
  Command.withSubcommands([merchant, deposit, catalogue, webhook]),
  Command.run({ name: "merchant purchasing operator CLI", version: "0.1.0" })
)

const MainLive = Layer.mergeAll(NodeContext.layer, NodeHttpClient.layer)

cli(process.argv).pipe(
  // Our failures are printed here; the CLI's own validation errors are printed by @effect/cli.
  Effect.tapError((error) => error._tag === "CliFailure" ? Console.error(`error: ${error.message}`) : Effect.void),
  Effect.provide(MainLive),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
