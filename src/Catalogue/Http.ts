import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Either, Option, Schema } from "effect"
import { MerchantApi } from "../Api.js"
import { decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import { FeedNotReady, InvalidQuery } from "../Domain/Errors.js"
import { centsCeil, centsFloor } from "../Domain/Money.js"
import { type FastBody, type FastGet, fastGet } from "../FastRoutes.js"
import { CatalogueApi, ListParams, SearchParams } from "./Api.js"
import { CatalogueDump } from "./Dump.js"
import { CatalogueEngine } from "./Engine.js"
import { type Entry, jsonListLength, writeJsonList } from "./Entry.js"
import type { ListFilters, SortOrder } from "./Index.js"

const PagePosition = Schema.Tuple(Schema.Literal("a", "d"), Schema.Int, Schema.UUID)

const deliveryFilter = (value: string | undefined) => value === "instant" || value === "manual" ? value : undefined

/** A page body: `prefix`, the items' ready JSON joined by commas in an array, `suffix`. */
interface PageParts {
  readonly prefix: string
  readonly entries: ReadonlyArray<Entry>
  readonly suffix: string
}

const pageLength = (page: PageParts) => page.prefix.length + page.suffix.length + 2 + jsonListLength(page.entries)

/** Writes the page into `target` from the start; returns the length. */
const writePage = (page: PageParts, target: Buffer): number => {
  let at = target.write(page.prefix, 0, "latin1")
  target[at++] = 0x5b // [
  at = writeJsonList(target, at, page.entries, false)
  target[at++] = 0x5d // ]
  return at + target.write(page.suffix, at, "latin1")
}

const pageBytes = (page: PageParts): Buffer => {
  const bytes = Buffer.allocUnsafe(pageLength(page))
  writePage(page, bytes)
  return bytes
}

/**
 * Page buffers for the fast lane, lent per response and given back once the socket has the bytes:
 * a list page is tens of kilobytes, and a fresh buffer per request (allocated outside V8's heap,
 * then collected) cost about a sixth of the request's CPU. 128 KB holds a page of 100 items; a
 * larger page gets a buffer of its own. At most PAGE_BUFFERS_KEPT idle buffers are kept (16 MB).
 */
const PAGE_BUFFER_BYTES = 128 * 1024
const PAGE_BUFFERS_KEPT = 128
const pageBuffers: Array<Buffer> = []

const lentPage = (page: PageParts): FastBody => {
  const length = pageLength(page)
  if (length > PAGE_BUFFER_BYTES) return { bytes: pageBytes(page) }
  const buffer = pageBuffers.pop() ?? Buffer.allocUnsafeSlow(PAGE_BUFFER_BYTES)
  writePage(page, buffer)
  return {
    bytes: buffer.subarray(0, length),
    release: () => {
      if (pageBuffers.length < PAGE_BUFFERS_KEPT) pageBuffers.push(buffer)
    }
  }
}

/**
 * Page bodies of the index as it is now, by query: clients poll the same few URLs, and the
 * catalogue changes a few times a second at most, so between two changes most fast-lane requests
 * get the bytes built for the first of them. Emptied whenever the index changes (the engine's
 * version), so a body is never older than the index; at most PAGE_CACHE_BYTES, beyond which pages
 * are built per request as before.
 */
const PAGE_CACHE_BYTES = 16 * 1024 * 1024

/** A responder for a prepared query's page, answered from the cache; the query's `build` is its key. */
const makePageCache = (engine: CatalogueEngine) => {
  const pages = new Map<() => PageParts, Buffer>()
  let version = -1
  let bytes = 0
  return (build: () => PageParts) => (): FastBody => {
    if (engine.version() !== version) {
      pages.clear()
      bytes = 0
      version = engine.version()
    }
    const known = pages.get(build)
    if (known !== undefined) return { bytes: known }
    const page = build()
    if (bytes + pageLength(page) > PAGE_CACHE_BYTES) return lentPage(page)
    const built = pageBytes(page)
    pages.set(build, built)
    bytes += built.length
    return { bytes: built }
  }
}

const json = (body: Uint8Array) => HttpServerResponse.uint8Array(body, { contentType: "application/json" })

/** A decoded `/items` query, ready to answer: its body is built from the index when asked. */
const listRequest = (
  engine: CatalogueEngine,
  q: typeof ListParams.Type
): Either.Either<() => PageParts, InvalidQuery> => {
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
      return { prefix: `{"items":`, entries: page.entries, suffix: `,"next_cursor":${next}}` }
    })
  })
}

const searchPage = (engine: CatalogueEngine, q: typeof SearchParams.Type): PageParts => {
  const page = engine.page(
    {
      marketHashName: q.market_hash_name,
      maxPrice: q.max_price === undefined ? undefined : centsFloor(q.max_price),
      minFloat: q.min_float,
      maxFloat: q.max_float,
      delivery: deliveryFilter(q.delivery_type)
    },
    "price_asc",
    undefined,
    q.limit ?? 10
  )
  return { prefix: `{"results":`, entries: page.entries, suffix: "}" }
}

/**
 * `/items` and `/items/search` in the fast lane: the same bodies as the handlers below, built once
 * per query and index version. A prepared query's page builder is its cache key (it is kept per URL).
 */
export const CatalogueFastRoutes = Effect.map(CatalogueEngine, (engine): ReadonlyArray<FastGet> => {
  const cached = makePageCache(engine)
  return [
    fastGet(
      { group: CatalogueApi, urlParams: ListParams },
      (q) => engine.isLoaded() ? Either.getOrUndefined(Either.map(listRequest(engine, q), cached)) : undefined
    ),
    fastGet({ group: CatalogueApi, urlParams: SearchParams }, (q) => engine.isLoaded() ? cached(() => searchPage(engine, q)) : undefined)
  ]
})

const acceptsGzip = (header: string | undefined) =>
  header !== undefined && header.split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";")
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="))
    return (coding === "gzip" || coding === "x-gzip") && (q === undefined || Number(q.slice(2)) > 0)
  })

/** Weak tags without their W/ prefix: If-None-Match compares weakly (RFC 9110 13.1.2). */
const opaqueTag = (tag: string) => tag.trim().replace(/^W\//, "")

/** Whether If-None-Match names the current representation: `*`, or any of its tags, weakly compared. */
const noneMatchHolds = (header: string, etag: string) => header.trim() === "*" || header.split(",").some((tag) => opaqueTag(tag) === opaqueTag(etag))

export const CatalogueHttp = HttpApiBuilder.group(MerchantApi, "catalogue", (handlers) =>
  Effect.gen(function*() {
    const engine = yield* CatalogueEngine
    const dump = yield* CatalogueDump

    return handlers
      .handle(
        "listItems",
        ({ urlParams }) => Effect.zipRight(engine.awaitLoaded, Effect.map(listRequest(engine, urlParams), (page) => json(pageBytes(page()))))
      )
      .handle("searchItems", ({ urlParams }) => Effect.zipRight(engine.awaitLoaded, Effect.sync(() => json(pageBytes(searchPage(engine, urlParams))))))
      .handle("fullDump", ({ headers, request }) =>
        Effect.gen(function*() {
          const built = yield* dump.awaitCurrent
          if (Option.isNone(built)) return yield* new FeedNotReady({ message: "The catalogue dump is being generated; retry with backoff." })
          const d = built.value
          const checkpoint: Record<string, string> = Option.match(d.checkpoint, {
            onNone: () => ({}),
            onSome: (c) => ({ "x-catalog-cursor": String(c.cursor), "x-catalog-epoch": String(c.epoch) })
          })
          if (headers["if-none-match"] !== undefined && noneMatchHolds(headers["if-none-match"], d.etag)) {
            return HttpServerResponse.empty({ status: 304, headers: { etag: d.etag, vary: "Accept-Encoding", ...checkpoint } })
          }
          const slot = yield* dump.acquireDownload(d)
          if (Option.isNone(slot)) {
            return yield* new FeedNotReady({ message: "Too many dump downloads in progress; retry with backoff." })
          }
          // The slot is the response's: given back when it closes, whether the body was read to the
          // end, the client went away, the request was interrupted, or there was no body to read
          // (HEAD). A body not read to its end is closed then too.
          const response = NodeHttpServerRequest.toServerResponse(request)
          response.once("close", slot.value)
          const common = {
            etag: d.etag,
            "last-modified": d.generatedAt.toUTCString(),
            "x-items-count": String(d.itemsCount),
            vary: "Accept-Encoding",
            ...checkpoint
          }
          const gzip = acceptsGzip(headers["accept-encoding"])
          const options = {
            contentType: "application/json",
            contentLength: gzip ? d.gzipLength : d.jsonLength,
            headers: gzip ? { ...common, "content-encoding": "gzip" } : common
          }
          // HEAD: the headers alone (the platform sends no body, so no file is opened for one)
          if (request.method === "HEAD") return HttpServerResponse.raw(null, options)
          if (gzip && Option.isSome(d.gzipBytes)) {
            // From memory, in one write that hands over all its bytes at once: its slot is given
            // back with them, as a read file's is with its last bytes (the download holds no
            // resource of its own: the bytes are the dump's, shared).
            slot.value()
            return HttpServerResponse.uint8Array(d.gzipBytes.value, options)
          }
          // The file is piped to the socket as node reads it (large reads: DumpFile.ts), with no
          // per-chunk work of ours. A complete download gives its slot back once the file's end
          // is read, before the response closes: the client has the whole body by its
          // Content-Length and may start its next download at once.
          const body = gzip ? dump.gzipStream(d) : dump.identityStream(d)
          body.once("end", slot.value)
          response.once("close", () => body.destroy())
          return HttpServerResponse.raw(body, options)
        }))
  }))
