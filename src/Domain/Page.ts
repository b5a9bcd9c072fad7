/**
 * The paging every list of the API shares (spec 8): `cursor` and `limit` in the query, `next_cursor`
 * in the answer. The cursor's content is Cursor.ts's; here it is an opaque string.
 */
import { Schema } from "effect"
import { IntegerText } from "./QueryNumbers.js"

/** `limit` of the lists: 1 to 200, default 50. */
export const PageLimit = IntegerText.pipe(Schema.between(1, 200)).annotations({
  jsonSchema: { type: "integer", minimum: 1, maximum: 200, default: 50 }
})

/** The query fields of a page, first in every list's query (spread into its Struct). */
export const PageQuery = {
  cursor: Schema.optional(Schema.String),
  limit: Schema.optional(PageLimit)
}

/** Where the next page starts; null on the last page. */
export const NextCursor = Schema.NullOr(Schema.String)
