import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { NodeStream } from "@effect/platform-node"
import { Effect, Either, Option, Schema, Stream } from "effect"
import { API_PREFIX, MerchantApi } from "../Api.js"
import type { FastRoute } from "../FastLane.js"
import { decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import { FeedNotReady, InvalidQuery } from "../Domain/Errors.js"
import { centsCeil, centsFloor } from "../Domain/Money.js"
import { CatalogueDump } from "./Dump.js"
import { ListParams, SearchParams } from "./Api.js"
import { CatalogueEngine } from "./Engine.js"
import type { Entry, ListFilters, SortOrder } from "./Index.js"

const PagePosition = Schema.Tuple(Schema.Literal("a", "d"), Schema.Int, Schema.UUID)

const deliveryFilter = (value: string | undefined) =>
  value === "instant" || value === "manual" ? value : undefined

/**
 * A page body: `prefix`, the items' ready JSON joined by commas in an array, `suffix`. Nothing is
 * encoded per request: the item JSON is ASCII (see `asciiJson`), so the joined text is copied into
 * the Buffer as it is (one call; a call per item costs more than the copy).
 */
const pageBytes = (prefix: string, entries: ReadonlyArray<Entry>, suffix: string): Buffer => {
  let text = prefix + "["
  for (let i = 0; i < entries.length; i++) text += (i === 0 ? "" : ",") + entries[i]!.json
  return Buffer.from(text + "]" + suffix, "latin1")
}

const json = (body: Uint8Array) => HttpServerResponse.uint8Array(body, { contentType: "application/json" })

/** A decoded `/items` query, ready to answer: its body is built from the index when asked. */
const listRequest = (
  engine: CatalogueEngine,
  q: typeof ListParams.Type
): Either.Either<() => Buffer, InvalidQuery> => {
  const sort: SortOrder = q.sort ?? "price_asc"
  const position = q.cursor === undefined ? Either.right(undefined) : decodeCursor(PagePosition, q.cursor)
  return Either.flatMap(position, (position) => {
    if (position !== undefined && position[0] !== (sort === "price_asc" ? "a" : "d")) {
      return Either.left(new InvalidQuery({ message: "cursor belongs to another sort order" }))
    }
    const filters: ListFilters = {
      marketHashName: q.market_hash_name,
      minPrice: q.min_price === undefined ? undefined : centsCeil(q.min_price),
      maxPrice: q.max_price === undefined ? undefined : centsFloor(q.max_price),
      category: q.category,
      exterior: q.exterior,
      rarity: q.rarity,
      minFloat: q.min_float,
      maxFloat: q.max_float,
      delivery: deliveryFilter(q.delivery_type)
    }
    const after = position && { price: position[1], id: position[2] }
    return Either.right(() => {
      const page = engine.page(filters, sort, after, q.limit ?? 50)
      const next = page.next === undefined ? "null" : `"${encodeCursor([sort === "price_asc" ? "a" : "d", page.next.price, page.next.id])}"`
      return pageBytes(`{"items":`, page.entries, `,"next_cursor":${next}}`)
    })
  })
}

const searchBody = (engine: CatalogueEngine, q: typeof SearchParams.Type) => {
  const page = engine.page({
    marketHashName: q.market_hash_name,
    maxPrice: q.max_price === undefined ? undefined : centsFloor(q.max_price),
    minFloat: q.min_float,
    maxFloat: q.max_float,
    delivery: deliveryFilter(q.delivery_type)
  }, "price_asc", undefined, q.limit ?? 10)
  return pageBytes(`{"results":`, page.entries, "}")
}

const decodeListParams = Schema.decodeUnknownEither(ListParams)
const decodeSearchParams = Schema.decodeUnknownEither(SearchParams)

/** `/items` and `/items/search` in the fast lane: the same bodies as the handlers below. */
export const CatalogueFastRoutes = Effect.map(CatalogueEngine, (engine): ReadonlyArray<FastRoute> => [
  {
    path: `${API_PREFIX}/items`,
    prepare: (query) =>
      engine.isLoaded() ? Either.getOrUndefined(Either.flatMap(decodeListParams(query), (q) => listRequest(engine, q))) : undefined
  },
  {
    path: `${API_PREFIX}/items/search`,
    prepare: (query) =>
      engine.isLoaded() ? Either.getOrUndefined(Either.map(decodeSearchParams(query), (q) => () => searchBody(engine, q))) : undefined
  }
])

const acceptsGzip = (header: string | undefined) =>
  header !== undefined && header.split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";")
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="))
    return (coding === "gzip" || coding === "x-gzip") && (q === undefined || Number(q.slice(2)) > 0)
  })

export const CatalogueHttp = HttpApiBuilder.group(MerchantApi, "catalogue", (handlers) =>
  Effect.gen(function*() {
    const engine = yield* CatalogueEngine
    const dump = yield* CatalogueDump

    return handlers
      .handle("listItems", ({ urlParams }) =>
        Effect.zipRight(engine.awaitLoaded, Effect.map(listRequest(engine, urlParams), (body) => json(body()))))
      .handle("searchItems", ({ urlParams }) =>
        Effect.zipRight(engine.awaitLoaded, Effect.sync(() => json(searchBody(engine, urlParams)))))
      .handle("fullDump", ({ headers }) =>
        Effect.gen(function*() {
          const built = dump.current()
          if (Option.isNone(built)) return yield* new FeedNotReady({ message: "The catalogue dump is being generated; retry with backoff." })
          const d = built.value
          const checkpoint: Record<string, string> = Option.match(d.checkpoint, {
            onNone: () => ({}),
            onSome: (c) => ({ "x-catalog-cursor": String(c.cursor), "x-catalog-epoch": String(c.epoch) })
          })
          if (headers["if-none-match"] !== undefined && headers["if-none-match"].split(",").map((t) => t.trim()).includes(d.etag)) {
            return HttpServerResponse.empty({ status: 304, headers: { etag: d.etag, ...checkpoint } })
          }
          if (!(yield* dump.acquireDownload(d))) {
            return yield* new FeedNotReady({ message: "Too many dump downloads in progress; retry with backoff." })
          }
          const common = {
            etag: d.etag,
            "last-modified": d.generatedAt.toUTCString(),
            "x-items-count": String(d.itemsCount),
            vary: "Accept-Encoding",
            ...checkpoint
          }
          const gzip = acceptsGzip(headers["accept-encoding"])
          const body = NodeStream.fromReadable(() => gzip ? dump.gzipStream(d) : dump.identityStream(d), (e) => e)
          return HttpServerResponse.stream(body.pipe(Stream.ensuring(dump.releaseDownload(d))), {
            contentType: "application/json",
            ...(gzip ? { contentLength: d.gzipLength } : { contentLength: d.jsonLength }),
            headers: gzip ? { ...common, "content-encoding": "gzip" } : common
          })
        }))
  }))
