/**
 * What every admin route shares: its error (the spec's Error body with an ADMIN_* code), JSON
 * answers, the body decoder and the path's id.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Data, Effect, Option, ParseResult, Schema } from "effect"
import { unstorableMessage, unstorablePath } from "../Domain/Db.js"
import { boundedMessage } from "../Domain/Errors.js"
import { type BodyProblem, bodyProblemMessage, bodyProblemOf } from "../RequestBody.js"

export class AdminError extends Data.TaggedError("AdminError")<{
  readonly status: number
  readonly code: string
  readonly message: string
}> {}

export const invalid = (message: string) => new AdminError({ status: 400, code: "ADMIN_INVALID_REQUEST", message })
export const notFound = (what: string) => new AdminError({ status: 404, code: "ADMIN_NOT_FOUND", message: `${what} not found` })

export const json = (body: unknown, status = 200) => HttpServerResponse.unsafeJson(body, { status })

/** The first problem of a body, as `field.path: message` (the whole schema tree is too long to read). */
const firstIssue = (error: ParseResult.ParseError) => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  return issue === undefined ? "invalid body" : boundedMessage(`${issue.path.length > 0 ? issue.path.join(".") : "body"}: ${issue.message}`)
}

/** A body refused as it was read (RequestBody.ts): too large is 413, the rest 400. */
const refusedBody = (problem: BodyProblem) =>
  problem._tag === "TooLarge"
    ? new AdminError({ status: 413, code: "ADMIN_BODY_TOO_LARGE", message: bodyProblemMessage(problem) })
    : invalid(bodyProblemMessage(problem))

/**
 * The JSON body decoded by `schema`; unreadable, refused or invalid bodies, or a string the database
 * cannot hold as it is (Db.ts `unstorablePath`), are 400.
 */
export const body = <A, I>(schema: Schema.Schema<A, I>) =>
  HttpServerRequest.schemaBodyJson(schema, { onExcessProperty: "ignore" }).pipe(
    Effect.catchAll((error) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const problem = bodyProblemOf(NodeHttpServerRequest.toIncomingMessage(request))
        return Effect.fail(
          problem !== undefined ?
            refusedBody(problem)
            : ParseResult.isParseError(error) ?
            invalid(firstIssue(error))
            : invalid("body must be JSON")
        )
      })
    ),
    Effect.flatMap((decoded) => {
      const unstorable = unstorablePath(decoded)
      return unstorable === undefined ? Effect.succeed(decoded) : Effect.fail(invalid(unstorableMessage(unstorable)))
    })
  )

/** Like `body`, for a body that may be left out: no body at all is decoded as `{}`. */
export const optionalBody = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const length = request.headers["content-length"]
    const none = length === "0" || (length === undefined && request.headers["transfer-encoding"] === undefined)
    return none
      ? Schema.decodeUnknown(schema)({}).pipe(Effect.mapError((error) => invalid(firstIssue(error))))
      : body(schema)
  })

/** The `:id` path parameter. */
export const pathId = HttpRouter.params.pipe(Effect.map((p) => p["id"] ?? ""))

export const found = <A>(what: string) => (option: Option.Option<A>) =>
  Option.match(option, { onNone: () => Effect.fail(notFound(what)), onSome: Effect.succeed })
