/**
 * What every admin handler shares: the admin token check, the ADMIN_* answers to what no handler
 * answers (a body that does not decode, is not JSON or is refused as it is read), the optional
 * body, the check that strings can be stored, and "not found".
 */
import { HttpApiBuilder, HttpApiError, HttpServerError, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, Layer, Option, ParseResult, Schema } from "effect"
import { logFault } from "../Db/ConnectionLoss.js"
import { unstorableMessage, unstorablePath } from "../Domain/Db.js"
import { boundedMessage, issueText } from "../Domain/Errors.js"
import { type BodyProblem, bodyProblemMessage, bodyProblemOf } from "../RequestBody.js"
import {
  AdminApi,
  AdminAuthorization,
  AdminBodyTooLarge,
  type AdminFailure,
  AdminInternalError,
  AdminInvalidRequest,
  AdminNotFound,
  AdminUnauthorized
} from "./AdminApi.js"
import { AdminToken } from "./AdminToken.js"

export const notFound = (what: string) => new AdminNotFound({ message: `${what} not found` })

export const found = <A>(what: string) => (option: Option.Option<A>) =>
  Option.match(option, { onNone: () => Effect.fail(notFound(what)), onSome: Effect.succeed })

/** A decoded body whose strings the database can hold as they are (Db.ts `unstorablePath`). */
export const storable = <A>(decoded: A): Effect.Effect<A, AdminInvalidRequest> => {
  const unstorable = unstorablePath(decoded)
  return unstorable === undefined ? Effect.succeed(decoded) : Effect.fail(new AdminInvalidRequest({ message: unstorableMessage(unstorable) }))
}

const issueMessage = (issue: { readonly path: ReadonlyArray<PropertyKey>; readonly message: string } | undefined) =>
  issue === undefined ? "invalid body" : boundedMessage(issueText(issue, "body"))

/** A body refused as it was read (RequestBody.ts): too large is 413, the rest 400. */
const refusedBody = (problem: BodyProblem) =>
  problem._tag === "TooLarge"
    ? new AdminBodyTooLarge({ message: bodyProblemMessage(problem) })
    : new AdminInvalidRequest({ message: bodyProblemMessage(problem) })

/**
 * A body that may be left out (no body at all is `{}`), decoded by `schema` in the handler: for
 * the routes whose body is optional, which a contract's payload cannot say.
 */
export const optionalBody = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const length = request.headers["content-length"]
    const none = length === "0" || (length === undefined && request.headers["transfer-encoding"] === undefined)
    const json = none ? {} : yield* request.json.pipe(Effect.mapError(() => {
      const problem = bodyProblemOf(NodeHttpServerRequest.toIncomingMessage(request))
      return problem !== undefined ? refusedBody(problem) : new AdminInvalidRequest({ message: "body must be JSON" })
    }))
    const decoded = yield* Schema.decodeUnknown(schema, { onExcessProperty: "ignore" })(json).pipe(
      Effect.mapError((error) => new AdminInvalidRequest({ message: issueMessage(ParseResult.ArrayFormatter.formatErrorSync(error)[0]) }))
    )
    return yield* storable(decoded)
  })

/** The token as the rest of the ops listener reads it (any case of "Bearer", Keys.ts `bearerToken`). */
export const AdminAuthorizationLive = Layer.effect(
  AdminAuthorization,
  Effect.map(AdminToken, (adminToken) =>
    AdminAuthorization.of({
      bearer: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          adminToken.verify(request.headers["authorization"]) ? Effect.void : Effect.fail(new AdminUnauthorized({ message: "admin token required" })))
    }))
)

/**
 * Framework failures of the admin API as its errors: a body refused as it was read is 413 or 400;
 * one that is not JSON, or does not decode, is ADMIN_INVALID_REQUEST with its first problem.
 * Unknown routes pass through (the ops listener answers them); defects become INTERNAL_ERROR.
 */
export const AdminErrors = HttpApiBuilder.middleware(AdminApi, (app) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    return yield* Effect.catchAllCause(app, (cause): Effect.Effect<HttpServerResponse.HttpServerResponse, AdminFailure> => {
      const failure = Option.getOrUndefined(Cause.failureOption(cause))
      const defect = Option.getOrUndefined(Cause.dieOption(cause))
      const error: unknown = failure ?? defect
      if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") return Effect.failCause(cause)
      const problem = bodyProblemOf(NodeHttpServerRequest.toIncomingMessage(request))
      if (error instanceof HttpApiError.HttpApiDecodeError || (HttpServerError.isServerError(error) && error._tag === "RequestError")) {
        return Effect.fail(
          problem !== undefined ?
            refusedBody(problem)
            : error instanceof HttpApiError.HttpApiDecodeError ?
            new AdminInvalidRequest({ message: issueMessage(error.issues[0]) })
            : new AdminInvalidRequest({ message: "body must be JSON" })
        )
      }
      if (failure === undefined && defect !== undefined) {
        return Effect.zipRight(logFault("admin request failed", cause), Effect.fail(new AdminInternalError({ message: "Internal error." })))
      }
      return Effect.failCause(cause)
    })
  }))
