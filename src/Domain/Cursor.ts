/** Opaque pagination cursors: base64url JSON of a keyset position, validated by a schema. */
import { Either, Schema } from "effect"
import { isCalendarDateTime } from "./Db.js"
import { InvalidQuery } from "./Errors.js"

export const encodeCursor = (position: unknown): string => Buffer.from(JSON.stringify(position)).toString("base64url")

/** Decodes a cursor; anything that is not one of ours is 400 MERCHANT_INVALID_QUERY (CONTRACT 6). */
export const decodeCursor = <A, I>(schema: Schema.Schema<A, I>, cursor: string): Either.Either<A, InvalidQuery> => {
  const invalid = new InvalidQuery({ message: "cursor is not valid: pass back next_cursor unchanged" })
  if (!/^[A-Za-z0-9_-]{1,2048}$/.test(cursor)) return Either.left(invalid)
  return Either.try((): unknown => JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))).pipe(
    Either.flatMap((json) => Schema.decodeUnknownEither(schema)(json)),
    Either.mapLeft(() => invalid)
  )
}

/** The keyset position of lists ordered by creation time descending, then id ascending. */
export const CreatedAtIdPosition = Schema.Tuple(
  Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/), Schema.filter(isCalendarDateTime)),
  Schema.UUID
)
