/**
 * The hot routes' fast handlers as their features declare them (Catalogue/Http.ts,
 * Merchants/Http.ts, Purchases/Http.ts); FastLane.ts answers them. Each names its endpoint by the
 * contract's own objects: the HttpApiGroup it is in and the schema it takes (its query, or its
 * payload with the status of its success). The route's path and method are that endpoint's, found
 * among the contract's endpoints (HttpErrors.ts PUBLIC_ROUTES, read with HttpApi.reflect), and
 * its input is typed and decoded by that very schema, as HttpApi decodes it. A declaration that
 * names no endpoint, or more than one, fails the start.
 */
import type { HttpApiGroup } from "@effect/platform"
import { Either, Option, type ParseResult, Schema } from "effect"
import type { ApiError } from "./Domain/Errors.js"
import type { AuthenticatedMerchant } from "./Domain/Merchant.js"
import { type ContractEndpoint, errorAnswer, PUBLIC_ROUTES, type Route, type WireAnswer } from "./HttpErrors.js"
import type { BodyBytes } from "./Responses.js"

/** Query parameters as HttpApi sees them: a repeated name is an array. */
export type Query = Record<string, string | Array<string>>

/** The 200 body of an authenticated GET (JSON), or its promise; a promise that fails is answered 500 and logged. */
export type FastBody = string | BodyBytes | Promise<string>

/** The body of a GET for the request's merchant: called once the request is authenticated. */
export type Responder = (merchant: AuthenticatedMerchant) => FastBody

/** A fast GET: its route in the contract, and the responder of a query (undefined: the HttpApi path answers it). */
export interface FastGet {
  readonly route: Route
  readonly prepare: (query: Query) => Responder | undefined
}

/** A fast POST: its route in the contract, and the answer to a parsed body (a decode failure, or the answer's promise). */
export interface FastPost {
  readonly route: Route
  readonly answer: (
    body: unknown,
    merchant: AuthenticatedMerchant,
    text: string
  ) => Either.Either<Promise<WireAnswer>, ParseResult.ParseError>
}

type Group = HttpApiGroup.HttpApiGroup.Any

/** Whether an endpoint's schema (none, or one) is `schema`, the very one (none: undefined). */
const sameSchema = (declared: Option.Option<Schema.Schema.All>, schema: Schema.Schema.All | undefined) => Option.getOrUndefined(declared)?.ast === schema?.ast

/** The one route of `group` with `method` whose endpoint `matches`. */
const contractRoute = (group: Group, method: string, matches: (contract: ContractEndpoint) => boolean): Route => {
  const found = PUBLIC_ROUTES.filter((route) =>
    route.method === method && route.contract !== undefined && route.contract.group.identifier === group.identifier &&
    matches(route.contract)
  )
  if (found.length !== 1) throw new Error(`a fast route names ${found.length} ${method} endpoints of ${group.identifier}, not one`)
  return found[0]!
}

/**
 * A fast GET of the endpoint of `group` whose query schema is `urlParams` (without one: the
 * group's GET endpoint that takes no query). `prepare` takes the query as HttpApi decodes it and
 * does nothing else: it gives the responder, or undefined to leave the request to the HttpApi
 * path, which answers it. A responder is kept for later requests of the same URL, so it must read
 * live state when it is called, not when it is prepared.
 */
export function fastGet<A, I>(
  endpoint: { readonly group: Group; readonly urlParams: Schema.Schema<A, I> },
  prepare: (urlParams: A) => Responder | undefined
): FastGet
export function fastGet(endpoint: { readonly group: Group }, prepare: () => Responder | undefined): FastGet
export function fastGet<A, I>(
  endpoint: { readonly group: Group; readonly urlParams?: Schema.Schema<A, I> },
  prepare: (urlParams?: A) => Responder | undefined
): FastGet {
  const { urlParams } = endpoint
  const route = contractRoute(endpoint.group, "GET", ({ endpoint }) => sameSchema(endpoint.urlParamsSchema, urlParams))
  if (urlParams === undefined) return { route, prepare: () => prepare() }
  const decode = Schema.decodeUnknownEither(urlParams)
  return { route, prepare: (query) => Either.match(decode(query), { onLeft: () => undefined, onRight: prepare }) }
}

/**
 * A fast POST of the endpoint of `group` that takes `payload` and answers `success` with
 * `status`. `answer` gets the payload decoded as HttpApi decodes it (the body's text beside it),
 * and gives the success, or an error of the contract, each answered with the contract's bytes.
 */
export const fastPost = <A, I, S, SI>(
  endpoint: { readonly group: Group; readonly payload: Schema.Schema<A, I>; readonly success: Schema.Schema<S, SI>; readonly status: number },
  answer: (payload: A, merchant: AuthenticatedMerchant, text: string) => Promise<Either.Either<S, ApiError>>
): FastPost => {
  const route = contractRoute(
    endpoint.group,
    "POST",
    (contract) => sameSchema(contract.endpoint.payloadSchema, endpoint.payload) && contract.successStatuses.has(endpoint.status)
  )
  const decode = Schema.decodeUnknownEither(endpoint.payload)
  const encode = Schema.encodeEither(endpoint.success)
  const wire = (outcome: Either.Either<S, ApiError>): WireAnswer =>
    Either.match(outcome, {
      onLeft: errorAnswer,
      onRight: (success) => ({ status: endpoint.status, contentType: "application/json", body: JSON.stringify(Either.getOrThrow(encode(success))) })
    })
  return { route, answer: (body, merchant, text) => Either.map(decode(body), (payload) => answer(payload, merchant, text).then(wire)) }
}
