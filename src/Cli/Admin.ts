/**
 * What every CLI command shares: the connection to the ops listener (options, environment, the
 * admin token file), one admin request through the admin API's typed client (HttpApiClient of
 * Ops/AdminApi.ts), and the printing of answers.
 *
 * Connection options, accepted before the command (`cli --ops-url X merchant show ID`) or on the
 * command itself (`cli merchant show ID --ops-url X`), the latter winning:
 * - `--ops-url`: else OPS_URL, else http://127.0.0.1:9090
 * - `--admin-token`: else ADMIN_TOKEN, else the file DATA_DIR/admin-token (DATA_DIR: ./data)
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import type * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Path from "@effect/platform/Path"
import { Config, Console, Data, Duration, Effect, Option, ParseResult, Redacted, Schema } from "effect"
import { declaredCodeAndStatus, issueText } from "../Domain/Errors.js"
import { AdminApi, type AdminFailure } from "../Ops/AdminApi.js"

/** A failure already worded for the operator; printed on stderr, exit code 1. */
export class CliFailure extends Data.TaggedError("CliFailure")<{ readonly message: string }> {}

const DEFAULT_OPS_URL = "http://127.0.0.1:9090"
const REQUEST_TIMEOUT = Duration.seconds(60)

export const connectionOptions = {
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
export const root = Command.make("cli", connectionOptions).pipe(
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
    Effect.mapError(() => new CliFailure({ message: `no admin token: pass --admin-token, set ADMIN_TOKEN, or create ${file}` }))
  )
  const token = text.trim()
  if (token === "") return yield* new CliFailure({ message: `the admin token file ${file} is empty` })
  return Redacted.make(token)
})

/** Resolves the connection: the command's flags, then the root's, then the environment. */
export const connection = (flags: ConnectionFlags) =>
  Effect.gen(function*() {
    const global = yield* root
    const fromEnv = {
      opsUrl: Config.string("OPS_URL").pipe(Config.withDefault(DEFAULT_OPS_URL)),
      token: Config.option(Config.redacted("ADMIN_TOKEN"))
    }
    const opsUrl = Option.isSome(flags.opsUrl)
      ? flags.opsUrl.value
      : Option.isSome(global.opsUrl)
      ? global.opsUrl.value
      : yield* fromEnv.opsUrl
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

/**
 * The admin API's typed client (Ops/AdminApi.ts), with the connection's token on every request.
 * `body`: a JSON body for an endpoint whose body is optional, which its contract cannot state.
 */
const clientOf = (conn: Connection, body?: unknown, onResponse?: (response: HttpClientResponse.HttpClientResponse) => void) =>
  HttpApiClient.make(AdminApi, {
    baseUrl: conn.opsUrl,
    transformClient: (client) =>
      client.pipe(
        HttpClient.mapRequest((request) => {
          const signed = HttpClientRequest.bearerToken(request, Redacted.value(conn.token))
          return body === undefined ? signed : HttpClientRequest.bodyUnsafeJson(signed, body)
        }),
        HttpClient.tap((response) => Effect.sync(() => onResponse?.(response)))
      )
  })

type AdminClient = Effect.Effect.Success<ReturnType<typeof clientOf>>

/** The operator's words for a failed request: the ADMIN_* code and message when the API gave one. */
const describeFailure = (
  conn: Connection,
  error: AdminFailure | HttpApiError.HttpApiDecodeError | HttpClientError.HttpClientError | ParseResult.ParseError
) => {
  if (error._tag === "RequestError") return `cannot reach the ops listener at ${conn.opsUrl}: ${error.cause ?? error.message}`
  if (error._tag === "ResponseError") return `HTTP ${error.response.status}: ${error.message}`
  if (error._tag === "ParseError") return `the ops listener's answer is not what this CLI expects: ${error.message}`
  const declared = declaredCodeAndStatus(error._tag)
  return declared === undefined ? error.message : `${declared.code} (HTTP ${declared.status}): ${error.message}`
}

/**
 * One admin request through the typed client: its decoded answer, or a CliFailure worded for the
 * operator (the API's error code and message, or why there was no answer).
 */
export const call = <A, E extends AdminFailure | HttpApiError.HttpApiDecodeError | HttpClientError.HttpClientError | ParseResult.ParseError>(
  conn: Connection,
  request: (client: AdminClient) => Effect.Effect<A, E>,
  options?: {
    readonly optionalBody?: unknown
    /** Sees the answer's status and headers (what the typed client does not return). */
    readonly onResponse?: (response: HttpClientResponse.HttpClientResponse) => void
  }
) =>
  Effect.gen(function*() {
    const client = yield* clientOf(conn, options?.optionalBody, options?.onResponse)
    return yield* request(client).pipe(
      Effect.mapError((error) => new CliFailure({ message: describeFailure(conn, error) })),
      Effect.timeoutFail({
        duration: REQUEST_TIMEOUT,
        onTimeout: () => new CliFailure({ message: `${conn.opsUrl}: no answer within ${Duration.format(REQUEST_TIMEOUT)}` })
      })
    )
  })

/**
 * A request body checked against the contract's schema before it is sent (the typed client sends
 * only bodies that fit): what does not fit fails as the service would refuse it.
 */
export const checked = <A, I>(schema: Schema.Schema<A, I>, body: unknown) =>
  Schema.decodeUnknown(schema, { onExcessProperty: "ignore" })(body).pipe(
    Effect.mapError((error) => {
      const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
      const detail = issue === undefined ? error.message : issueText(issue, "body")
      return new CliFailure({ message: `ADMIN_INVALID_REQUEST (refused before sending): ${detail}` })
    })
  )

/**
 * Prints an answer: with --json the body as the contract encodes it (`schema`: the endpoint's
 * success), else `summary` of it.
 */
export const report = <A, I>(conn: Connection, answer: A, schema: Schema.Schema<A, I>, summary: (body: A) => string) =>
  conn.json
    ? Effect.flatMap(Effect.orDie(Schema.encode(schema)(answer)), (encoded) => Console.log(JSON.stringify(encoded)))
    : Console.log(summary(answer))

export const show = (value: string | null | undefined) => value === null || value === undefined || value === "" ? "-" : value

/** `  label: value` lines, labels aligned. */
export const lines = (title: string, fields: ReadonlyArray<readonly [string, string]>) => {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1
  return [title, ...fields.map(([label, value]) => `  ${(label + ":").padEnd(width)} ${value}`)].join("\n")
}
