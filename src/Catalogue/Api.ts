/** The catalogue endpoints (spec 2.6, 2.7, 4.2). The realtime feed is a raw route (Stream.ts). */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CatalogItem } from "../Domain/CatalogItem.js"
import { IsoDateTime } from "../Domain/Db.js"
import { failsAs, InvalidSort, Wire } from "../Domain/Errors.js"
import { NextCursor, PageQuery } from "../Domain/Page.js"
import { DecimalText, IntegerText, UsdText } from "../Domain/QueryNumbers.js"
import { Authentication } from "../Merchants/Api.js"

/** A USD bound: a price is never negative, so a negative bound is a mistake, not "no bound". */
const Price = UsdText
const Float = DecimalText.pipe(Schema.between(0, 1)).annotations({ jsonSchema: { type: "number", minimum: 0, maximum: 1 } })

export const ItemPage = Schema.Struct({
  items: Schema.Array(CatalogItem),
  next_cursor: NextCursor
}).annotations({ identifier: "CatalogItemPage" })

export const SearchResults = Schema.Struct({
  results: Schema.Array(CatalogItem)
}).annotations({ identifier: "CatalogSearchResults" })

export const CatalogFullDump = Schema.Struct({
  generated_at: IsoDateTime,
  items_count: Schema.Int,
  items: Schema.Array(CatalogItem)
}).annotations({ identifier: "CatalogFullDump" })

export const ListParams = Schema.Struct({
  ...PageQuery,
  market_hash_name: Schema.optional(Schema.String),
  min_price: Schema.optional(Price),
  max_price: Schema.optional(Price),
  category: Schema.optional(Schema.String),
  exterior: Schema.optional(Schema.String),
  rarity: Schema.optional(Schema.String),
  min_float: Schema.optional(Float),
  max_float: Schema.optional(Float),
  delivery_type: Schema.optional(Schema.String.annotations({ description: "`instant` or `manual`; unknown values are ignored" })),
  sort: Schema.optional(Schema.Literal("price_asc", "price_desc").annotations(failsAs(InvalidSort)))
})

export const SearchParams = Schema.Struct({
  // an empty name is as missing as an absent one (buy-by-name refuses it too)
  market_hash_name: Schema.String.pipe(Schema.minLength(1)).annotations({ description: "Exact, case-sensitive; required, not empty" }),
  max_price: Schema.optional(Price),
  min_float: Schema.optional(Float),
  max_float: Schema.optional(Float),
  delivery_type: Schema.optional(Schema.String.annotations({ description: "`instant` or `manual`; unknown values are ignored" })),
  limit: Schema.optional(
    IntegerText.pipe(Schema.between(1, 50)).annotations({
      jsonSchema: { type: "integer", minimum: 1, maximum: 50, default: 10 }
    })
  )
})

const DumpHeaders = Schema.Struct({
  "if-none-match": Schema.optional(Schema.String),
  "accept-encoding": Schema.optional(Schema.String)
})

export class CatalogueApi extends HttpApiGroup.make("catalogue")
  .add(
    HttpApiEndpoint.get("listItems", "/items")
      .setUrlParams(ListParams)
      .addSuccess(ItemPage)
      .addError(Wire.InvalidQuery)
      .addError(Wire.InvalidSort)
  )
  .add(
    HttpApiEndpoint.get("searchItems", "/items/search")
      .setUrlParams(SearchParams)
      .addSuccess(SearchResults)
      .addError(Wire.InvalidQuery)
  )
  .add(
    HttpApiEndpoint.get("fullDump", "/items/full-dump")
      .setHeaders(DumpHeaders)
      .addSuccess(CatalogFullDump)
      .addSuccess(Schema.Void.pipe(HttpApiSchema.asEmpty({ status: 304, decode: () => undefined })))
      .addError(Wire.FeedNotReady)
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Catalogue")
{}
