/** Column decoders shared by the repositories: pg returns int8 and numeric as strings. */
import { Schema } from "effect"

/** An int8 column (cents, counts) as a safe integer. */
export const Int8 = Schema.Union(Schema.Number, Schema.NumberFromString).pipe(
  Schema.int(),
  Schema.filter((n) => Number.isSafeInteger(n), { message: () => "int8 beyond 2^53" })
)

/** A timestamptz column. */
export const Timestamp = Schema.DateFromSelf

/** ISO 8601 UTC with a Z suffix (spec 1). */
export const iso = (date: Date): string => date.toISOString()
