/** Column decoders shared by the repositories: pg returns int8 and numeric as strings. */
import { Effect, Schema } from "effect"

/** An int8 column (cents, counts) as a safe integer. */
export const Int8 = Schema.Union(Schema.Number, Schema.NumberFromString).pipe(
  Schema.int(),
  Schema.filter((n) => Number.isSafeInteger(n), { message: () => "int8 beyond 2^53" })
)

/** A numeric column (pg returns numeric as a string, PGlite as a number). */
export const Numeric = Schema.Union(Schema.Number, Schema.NumberFromString)

/**
 * Decodes a statement's rows with the row's schema: `sql\`...\`.pipe(rowsOf(Row))`. For statements
 * built from fragments and closures, which SqlSchema's encoded request cannot carry; a read whose
 * request is plain data goes through SqlSchema.
 */
export const rowsOf = <A, I>(Row: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Schema.Array(Row))
  return <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) => Effect.flatMap(statement, decode)
}

/** A row of one count (`count(*) AS n`). */
export const CountRow = Schema.Struct({ n: Int8 })

/** A timestamptz column. */
export const Timestamp = Schema.DateFromSelf

/** ISO 8601 UTC with a Z suffix (spec 1). */
export const iso = (date: Date): string => date.toISOString()

/** A timestamp in a response: ISO 8601 UTC with a Z suffix, declared as such to OpenAPI. */
export const IsoDateTime = Schema.String.annotations({
  description: "ISO 8601 UTC",
  jsonSchema: { type: "string", format: "date-time" }
})

/**
 * Why a string cannot go to a text column as it is, or undefined: PostgreSQL's text cannot hold
 * U+0000, and a lone surrogate (JSON's "\ud800") would be stored as U+FFFD, so two different
 * values (two custom_ids, two names) would become one.
 */
const unstorable = (s: string): string | undefined =>
  s.includes("\u0000") ?
    "must not contain the NUL character (U+0000)"
    : /\p{Cs}/u.test(s) ?
    "must not contain a lone surrogate (invalid Unicode)"
    : undefined

/** A string a text column can hold. */
export const StorableString = Schema.String.pipe(Schema.filter((s) => unstorable(s) ?? true))

/** The first string within `value` (objects and arrays, deep) that a text column cannot hold: its path and why. */
export const unstorablePath = (
  value: unknown,
  path: ReadonlyArray<string | number> = []
): { readonly path: ReadonlyArray<string | number>; readonly problem: string } | undefined => {
  if (typeof value === "string") {
    const problem = unstorable(value)
    return problem === undefined ? undefined : { path, problem }
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorablePath(value[i], [...path, i])
      if (found !== undefined) return found
    }
  } else if (typeof value === "object" && value !== null) {
    for (const [key, v] of Object.entries(value)) {
      const found = unstorablePath(v, [...path, key])
      if (found !== undefined) return found
    }
  }
  return undefined
}

/** What a string found by `unstorablePath` is reported as. */
export const unstorableMessage = (found: { readonly path: ReadonlyArray<string | number>; readonly problem: string }) =>
  `${found.path.join(".") || "body"}: ${found.problem}`

/**
 * A calendar date-time PostgreSQL's timestamptz holds: `YYYY-MM-DDTHH:MM[:SS[.frac]]` with a real
 * date (no February 30), hours 0 to 23, minutes and seconds 0 to 59, at an instant between the
 * years 1 and 9999. JavaScript's Date would roll an impossible date over, and the database
 * refuses year 0.
 */
export const isCalendarDateTime = (s: string): boolean => {
  const parts = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?/.exec(s)
  const instant = Date.parse(s)
  if (parts === null || Number.isNaN(instant)) return false
  const [year, month, day, hour, minute, second = 0] = parts.slice(1).map((p) => (p === undefined ? 0 : Number(p))) as [
    number,
    number,
    number,
    number,
    number,
    number
  ]
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  const instantYear = new Date(instant).getUTCFullYear()
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day &&
    hour <= 23 && minute <= 59 && second <= 59 && instantYear >= 1 && instantYear <= 9999
}
