/**
 * How the public listener answers what no handler answered: decode failures as their field's
 * code (the field's `failsAs` annotation in its feature's Api.ts), unreadable bodies as problem
 * details, a known path with another method as 405, unknown routes as 404, and defects as a bare
 * 500 in the spec's shape (spec 4.3, 7; CONTRACT 6).
 */
import {
  HttpApi,
  HttpApiBuilder,
  type HttpApiEndpoint,
  HttpApiError,
  type HttpApiGroup,
  type HttpMethod,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, Either, Option, type ParseResult, Schema, type SchemaAST } from "effect"
import { API_PREFIX, MerchantApi } from "./Api.js"
import { CABINET_PAGE_PATHS } from "./Cabinet/Page.js"
import { STREAM_PATH } from "./Catalogue/Stream.js"
import { logFault } from "./Db/ConnectionLoss.js"
import * as Errors from "./Domain/Errors.js"
import { WALLET_CALLBACK_PATH } from "./Providers/Simulator/WalletProviderSim.js"
import { type BodyProblem, bodyProblemMessage, bodyProblemOf } from "./RequestBody.js"

export const OPENAPI_PATH = `${API_PREFIX}/openapi.json` as const
export const DOCS_PATH = "/docs" as const

// ---- the routes, and what each field fails as ----------------------------------------------------

/** An endpoint of the contract as HttpApi.reflect gives it, with its group. */
export interface ContractEndpoint {
  readonly group: HttpApiGroup.HttpApiGroup.AnyWithProps
  readonly endpoint: HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>
  /** The statuses of its successes. */
  readonly successStatuses: ReadonlySet<number>
}

export interface Route {
  readonly method: string
  readonly path: string
  /** The contract's endpoint (raw routes have none). */
  readonly contract: ContractEndpoint | undefined
  /** Decodes a query as HttpApi does (the endpoint's URL parameters; none: any query). */
  readonly decodeQuery: (query: unknown) => Either.Either<unknown, ParseResult.ParseError>
  /** Body, query and path fields whose failures have their own code. */
  readonly fieldErrors: ReadonlyMap<string, Errors.ApiErrorConstructor>
  readonly pathParams: ReadonlySet<string>
  /** What a body that is not an object fails as: its first field with its own code. */
  readonly bodyError: Errors.ApiErrorConstructor | undefined
}

/** The fields of a Struct schema with the error each fails as. */
const fieldsOf = (schema: Option.Option<{ readonly ast: SchemaAST.AST }>): ReadonlyArray<readonly [string, Errors.ApiErrorConstructor | undefined]> =>
  Option.match(schema, {
    onNone: () => [],
    onSome: ({ ast }) =>
      ast._tag === "TypeLiteral"
        ? ast.propertySignatures.map((field) => [String(field.name), Errors.fieldErrorOf(field.type)] as const)
        : []
  })

const anyQuery = () => Either.right({})

/** Every route of the public listener: the contract's endpoints and the raw routes beside them. */
const publicRoutes = (): ReadonlyArray<Route> => {
  const raw = (method: string, path: string): Route => ({
    method,
    path,
    contract: undefined,
    decodeQuery: anyQuery,
    fieldErrors: new Map(),
    pathParams: new Set(),
    bodyError: undefined
  })
  const routes = [
    raw("GET", STREAM_PATH),
    raw("GET", OPENAPI_PATH),
    raw("GET", DOCS_PATH),
    raw("POST", WALLET_CALLBACK_PATH),
    ...CABINET_PAGE_PATHS.map((path) => raw("GET", path))
  ]
  HttpApi.reflect(MerchantApi, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint, group, successes }) => {
      const params = fieldsOf(endpoint.pathSchema)
      const body = fieldsOf(endpoint.payloadSchema)
      const fieldErrors = new Map<string, Errors.ApiErrorConstructor>()
      for (const [name, error] of [...params, ...fieldsOf(endpoint.urlParamsSchema), ...body]) if (error !== undefined) fieldErrors.set(name, error)
      routes.push({
        method: endpoint.method,
        path: endpoint.path,
        contract: { group, endpoint, successStatuses: new Set(successes.keys()) },
        decodeQuery: Option.match(endpoint.urlParamsSchema, { onNone: () => anyQuery, onSome: (schema) => Schema.decodeUnknownEither(schema) }),
        fieldErrors,
        pathParams: new Set(params.map(([name]) => name)),
        bodyError: body.find(([, error]) => error !== undefined)?.[1]
      })
    }
  })
  return routes
}

/** The routes, read from the contract once. */
export const PUBLIC_ROUTES = publicRoutes()

/**
 * The routes of a request's path, matched as the router matches (a `:name` segment is any one
 * segment, repeated slashes are one, letters in any case).
 */
const makeRouteFinder = (routes: ReadonlyArray<Route>) => {
  const byTemplate = new Map<string, { readonly pattern: RegExp; readonly routes: Array<Route> }>()
  for (const route of routes) {
    const known = byTemplate.get(route.path) ?? {
      pattern: new RegExp(`^${route.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z]+/g, "[^/]+")}/?$`, "i"),
      routes: []
    }
    known.routes.push(route)
    byTemplate.set(route.path, known)
  }
  return (url: string): ReadonlyArray<Route> => {
    const path = url.split("?")[0]!.replace(/\/{2,}/g, "/")
    for (const { pattern, routes } of byTemplate.values()) if (pattern.test(path)) return routes
    return []
  }
}

const routesOf = makeRouteFinder(PUBLIC_ROUTES)

const routeOf = (request: HttpServerRequest.HttpServerRequest): Route | undefined => routesOf(request.url).find((route) => route.method === request.method)

// ---- responses -----------------------------------------------------------------------------------

/**
 * The error a request that failed to decode gets (`issues` as HttpApiDecodeError has them,
 * `message` when there are none): its first failing field's own error, else INVALID_QUERY.
 */
export const decodeFailure = (
  method: string,
  route: Route | undefined,
  issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>,
  message: string
): Errors.ApiError => {
  const issue = issues[0]
  const field = issue !== undefined && issue.path.length > 0 ? String(issue.path[0]) : undefined
  const text = Errors.boundedMessage(issue === undefined ? message : Errors.issueText(issue, "request"))
  const forField = field !== undefined ? route?.fieldErrors.get(field) : method === "GET" ? undefined : route?.bodyError
  return forField !== undefined ? new forField({ message: text }) : new Errors.InvalidQuery({ message: text })
}

/** An answer's status, Content-Type and body, for either path (HttpServerResponse or node's response). */
export interface WireAnswer {
  readonly status: number
  readonly contentType: string
  readonly body: string
}

/** An error of the contract as HttpApi encodes it. */
export const errorAnswer = (error: Errors.ApiError): WireAnswer => ({ ...Errors.errorWire(error), contentType: "application/json" })

/** RFC 9457 problem details, with the spec's error object beside them. */
const problemAnswer = (status: number, title: string, code: string, detail: string): WireAnswer => ({
  status,
  contentType: "application/problem+json",
  body: JSON.stringify({ type: "about:blank", title, status, detail, error: { code, message: detail } })
})

/** A body that is not JSON. */
export const malformedBody = (detail: string): WireAnswer => problemAnswer(400, "Bad Request", "MERCHANT_MALFORMED_JSON", detail)

/** What a body JSON.parse refused is told (the platform's RequestError has no description of its own). */
export const NOT_JSON = "request body is not valid JSON"

/**
 * A body refused as it was read (RequestBody.ts): too large is 413 (the rest of the body is read
 * and dropped, so that the client, still sending, reads the answer); a deep value is its field's
 * error, as any value of a wrong type is (CONTRACT 6); the rest is not JSON.
 */
export const bodyProblemAnswer = (route: Route | undefined, problem: BodyProblem): WireAnswer => {
  const message = bodyProblemMessage(problem)
  if (problem._tag === "TooLarge") return problemAnswer(413, "Content Too Large", "MERCHANT_BODY_TOO_LARGE", message)
  const forField = problem._tag === "TooDeep"
    ? (problem.field !== undefined ? route?.fieldErrors.get(problem.field) : route?.bodyError)
    : undefined
  return forField !== undefined ? errorAnswer(new forField({ message })) : malformedBody(message)
}

/** A defect's answer: a bare 500 in the spec's shape. */
export const INTERNAL_ERROR: WireAnswer = {
  status: 500,
  contentType: "application/json",
  body: Errors.errorBody("MERCHANT_INTERNAL_ERROR", "Internal error. The request may be retried; for purchases keep the same custom_id.")
}

const responseOf = (answer: WireAnswer) => HttpServerResponse.text(answer.body, { status: answer.status, contentType: answer.contentType })

const hasNoBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["transfer-encoding"] === undefined && (request.headers["content-length"] ?? "0").trim() === "0"

/** 404 for an unknown path; 405 with `Allow` for a known path with another method. */
const routeNotFound = (request: HttpServerRequest.HttpServerRequest) => {
  const path = request.url.split("?")[0]
  const routes = routesOf(request.url)
  // the router takes path parameters of at most 100 characters: a longer id is no such resource
  const own = routes.find((route) => route.method === request.method)
  const idError = own === undefined ? undefined : [...own.pathParams].map((name) => own.fieldErrors.get(name)).find((e) => e !== undefined)
  if (idError !== undefined) return Errors.errorResponse(new idError({ message: `No such resource: ${Errors.boundedMessage(path ?? "")}` }))
  const methods = routes.map((route) => route.method)
  if (methods.length === 0) {
    return HttpServerResponse.text(Errors.errorBody("MERCHANT_NOT_FOUND", `No route for ${request.method} ${path}`), {
      status: 404,
      contentType: "application/json"
    })
  }
  const allowed = methods.includes("GET") ? [...methods, "HEAD"] : methods
  return HttpServerResponse.text(
    Errors.errorBody("MERCHANT_METHOD_NOT_ALLOWED", `${request.method} is not allowed on ${path}; allowed: ${allowed.join(", ")}`),
    { status: 405, contentType: "application/json", headers: { allow: allowed.join(", ") } }
  )
}

export const internalError = responseOf(INTERNAL_ERROR)

const isRequestError = (u: unknown): u is HttpServerError.RequestError => HttpServerError.isServerError(u) && u._tag === "RequestError"

/**
 * Framework failures become the spec's errors; defects are logged and become a bare 500. Typed
 * API errors pass through to HttpApi's own encoding.
 */
export const SpecErrors = HttpApiBuilder.middleware(MerchantApi, (app) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    return yield* Effect.catchAllCause(app, (cause) => {
      const failure = Option.getOrUndefined(Cause.failureOption(cause))
      const defect = Option.getOrUndefined(Cause.dieOption(cause))
      const error: unknown = failure ?? defect
      const route = routeOf(request)
      const problem = bodyProblemOf(NodeHttpServerRequest.toIncomingMessage(request))
      if (problem !== undefined) return Effect.succeed(responseOf(bodyProblemAnswer(route, problem)))
      if (error instanceof HttpApiError.HttpApiDecodeError) {
        // an empty body is no JSON at all (CONTRACT 6), not a body missing its fields (unless a path
        // parameter failed: a body-less POST such as a wallet's reconcile)
        const field = error.issues[0]?.path[0]
        const failsPathParam = field !== undefined && route?.pathParams.has(String(field)) === true
        if ((request.method === "POST" || request.method === "PUT") && hasNoBody(request) && !failsPathParam) {
          return Effect.succeed(responseOf(malformedBody("request body is empty: a JSON object is expected")))
        }
        return Effect.succeed(Errors.errorResponse(decodeFailure(request.method, route, error.issues, error.message)))
      }
      if (isRequestError(error)) return Effect.succeed(responseOf(malformedBody(error.description ?? NOT_JSON)))
      if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") return Effect.succeed(routeNotFound(request))
      if (failure === undefined && defect !== undefined) return Effect.as(logFault("unhandled defect", cause), internalError)
      return Effect.failCause(cause)
    })
  }))
