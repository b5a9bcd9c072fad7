/**
 * What every CLI command shares: the connection to the ops listener (options, environment, the
 * admin token file), one admin request, and the printing of answers.
 *
 * Connection options, accepted before the command (`cli --ops-url X merchant show ID`) or on the
 * command itself (`cli merchant show ID --ops-url X`), the latter winning:
 * - `--ops-url`: else OPS_URL, else http://127.0.0.1:9090
 * - `--admin-token`: else ADMIN_TOKEN, else the file DATA_DIR/admin-token (DATA_DIR: ./data)
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Path from "@effect/platform/Path"
import { Config, Console, Data, Duration, Effect, Option, Redacted, Schema } from "effect"

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
export const call = (conn: Connection, method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, body?: unknown) =>
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
export const report = <A, I>(conn: Connection, answer: Answer, schema: Schema.Schema<A, I>, summary: (body: A) => string) =>
  conn.json
    ? (answer.text === "" ? Effect.void : Console.log(answer.text))
    : Option.match(Schema.decodeUnknownOption(Schema.parseJson(schema))(answer.text), {
      onSome: (body) => Console.log(summary(body)),
      onNone: () => Console.log(answer.text === "" ? `done (HTTP ${answer.status})` : answer.text)
    })

export const show = (value: string | null | undefined) => value === null || value === undefined || value === "" ? "-" : value

/** `  label: value` lines, labels aligned. */
export const lines = (title: string, fields: ReadonlyArray<readonly [string, string]>) => {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1
  return [title, ...fields.map(([label, value]) => `  ${(label + ":").padEnd(width)} ${value}`)].join("\n")
}

export const id = (segment: string) => encodeURIComponent(segment)
