/**
 * The tests' typed clients: HttpApiClient of the merchant API (src/Api.ts) and of the admin API
 * (src/Ops/AdminApi.ts). A request is built from the contract (path, query, body) and its answer
 * is decoded by the endpoint's success schema, so a body that breaks the contract fails the test;
 * a declared API error comes back as its typed error (`_tag`, `code`, `message`). A success whose
 * JSON holds a field its schema does not declare fails too (decoding alone would drop it).
 *
 * Bad input, raw headers and undocumented answers cannot be sent or read through a typed client:
 * those tests keep `server.api` / `server.admin` (support/server.ts).
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Cause, Effect, Either, FiberRef, Runtime } from "effect"
import { MerchantApi } from "../../src/Api.js"
import { AdminApi } from "../../src/Ops/AdminApi.js"

/** Called with the text of every response the client gets (to compare the bytes with the decoded answer). */
type Seen = (text: string) => void

/**
 * Where the request running in this fiber reports its response's text: set by each `call` and
 * `attempt` for its own request, so one client (built once: building one costs milliseconds of the
 * test process, which also runs the tests' webhook receivers) serves concurrent requests.
 */
const seenHere = FiberRef.unsafeMake<Seen | undefined>(undefined)

const withToken = (token: string) => (client: HttpClient.HttpClient) =>
  client.pipe(
    HttpClient.mapRequest(HttpClientRequest.bearerToken(token)),
    // the body's bytes are read once and kept: the decoding reads the same bytes again
    HttpClient.tap((response) =>
      Effect.flatMap(
        FiberRef.get(seenHere),
        (seen) => seen === undefined ? Effect.void : Effect.ignore(Effect.map(response.arrayBuffer, (bytes) => seen(new TextDecoder().decode(bytes))))
      )
    )
  )

const merchantClientOf = (baseUrl: string, apiKey: string) => HttpApiClient.make(MerchantApi, { baseUrl, transformClient: withToken(apiKey) })

const adminClientOf = (opsUrl: string, token: string) => HttpApiClient.make(AdminApi, { baseUrl: opsUrl, transformClient: withToken(token) })

export type MerchantClient = Effect.Effect.Success<ReturnType<typeof merchantClientOf>>
export type AdminClient = Effect.Effect.Success<ReturnType<typeof adminClientOf>>

/** Runs requests through one typed client: `call` resolves to the decoded answer, `attempt` to an Either. */
export interface Typed<C> {
  /** The decoded success; a declared error or a body that breaks the contract rejects. */
  readonly call: <A, E>(request: (client: C) => Effect.Effect<A, E>) => Promise<A>
  /** Right: the decoded success; Left: the declared API error (a transport or decoding failure rejects). */
  readonly attempt: <A, E extends { readonly _tag: string }>(request: (client: C) => Effect.Effect<A, E>) => Promise<Either.Either<A, E>>
}

/** Failures that are not an answer of the API: the test fails on them rather than reading them as one. */
const NOT_AN_ANSWER = new Set(["HttpApiDecodeError", "RequestError", "ResponseError", "ParseError"])

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype

/**
 * Decoding drops the fields a schema does not name, so a success whose JSON has a field the
 * contract does not declare would pass unseen: every field of the JSON must be in the decoded answer.
 */
export const expectNoUndeclaredFields = (json: unknown, decoded: unknown, path = "$"): void => {
  if (Array.isArray(json) && Array.isArray(decoded)) {
    json.forEach((element, i) => expectNoUndeclaredFields(element, decoded[i], `${path}[${i}]`))
  } else if (isPlainObject(json) && isPlainObject(decoded)) {
    for (const key of Object.keys(json)) {
      if (!(key in decoded)) throw new Error(`the answer has a field the contract does not declare: ${path}.${key}`)
      expectNoUndeclaredFields(json[key], decoded[key], `${path}.${key}`)
    }
  }
}

const expectOnlyDeclared = (texts: ReadonlyArray<string>, decoded: unknown) => {
  const text = texts[texts.length - 1]
  if (text === undefined || text === "") return
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return
  }
  expectNoUndeclaredFields(json, decoded)
}

const causeOf = (error: unknown): unknown => typeof error === "object" && error !== null && "cause" in error ? error.cause : undefined

/** The codes and messages down an error's `cause` chain: "fetch failed <- ECONNRESET: read ECONNRESET". */
const causeChain = (error: unknown): string => {
  const links: Array<string> = []
  for (let cause = causeOf(error); cause !== undefined && links.length < 5; cause = causeOf(cause)) {
    const code = typeof cause === "object" && cause !== null && "code" in cause ? `${String(cause.code)}: ` : ""
    links.push(`${code}${cause instanceof Error ? cause.message : String(cause)}`)
  }
  return links.join(" <- ")
}

/** What the server behind a URL is and said last, by URL: set by the harness that started it. */
const serverReports = new Map<string, () => string>()

/** Registers what a transport error's rejection tells about the server at `url` (support/server.ts). */
export const reportServerOnTransportError = (url: string, report: () => string) => {
  serverReports.set(url, report)
}

/**
 * A request that failed below HTTP rejects with "Transport error (GET url)" alone: the rejection
 * also names what the socket said (refused, reset, closed) and what the server said last, so that
 * a failure on a loaded CI machine tells what happened. Any other rejection is left as it is.
 */
const run = async <A, E>(effect: Effect.Effect<A, E>, url: string): Promise<A> => {
  try {
    return await Effect.runPromise(effect)
  } catch (error) {
    const failure = Runtime.isFiberFailure(error) ? Cause.squash(error[Runtime.FiberFailureCauseId]) : error
    const chain = causeChain(failure)
    if (chain === "") throw error
    const report = serverReports.get(url)?.() ?? "nothing is known of the server"
    throw new Error(`${error instanceof Error ? error.message : String(error)} (${chain})\n${report}`, { cause: error })
  }
}

/** Runs each request with its own sink for the response's text; `url`: the server's, for a transport error's report. */
const typed = <C>(client: C, url: string): Typed<C> => ({
  call: async (request) => {
    const texts: Array<string> = []
    const value = await run(Effect.locally(request(client), seenHere, (text) => texts.push(text)), url)
    expectOnlyDeclared(texts, value)
    return value
  },
  attempt: async (request) => {
    const texts: Array<string> = []
    const result = await run(
      Effect.locally(request(client), seenHere, (text) => texts.push(text)).pipe(
        Effect.catchIf((error) => NOT_AN_ANSWER.has(error._tag), Effect.die),
        Effect.either
      ),
      url
    )
    if (Either.isRight(result)) expectOnlyDeclared(texts, result.right)
    return result
  }
})

// one client per URL and key, built on first use
const merchantClients = new Map<string, Typed<MerchantClient>>()
const adminClients = new Map<string, Typed<AdminClient>>()
const once = <C>(clients: Map<string, Typed<C>>, url: string, key: string, make: () => C): Typed<C> => {
  let client = clients.get(`${url} ${key}`)
  if (client === undefined) {
    client = typed(make(), url)
    clients.set(`${url} ${key}`, client)
  }
  return client
}

/** The merchant API's typed client for one API key (`baseUrl`: the listener's root, without the /api prefix). */
export const merchantClient = (baseUrl: string, apiKey: string): Typed<MerchantClient> =>
  once(merchantClients, baseUrl, apiKey, () => Effect.runSync(merchantClientOf(baseUrl, apiKey).pipe(Effect.provide(FetchHttpClient.layer))))

/** The admin API's typed client on the ops listener. */
export const adminClient = (opsUrl: string, token: string): Typed<AdminClient> =>
  once(adminClients, opsUrl, token, () => Effect.runSync(adminClientOf(opsUrl, token).pipe(Effect.provide(FetchHttpClient.layer))))
