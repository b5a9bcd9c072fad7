/**
 * A statement's parameters as the text (or bytes) sent in a Bind message, for the statements
 * sent at once (Pipeline.ts), which bind their own values: node-postgres's own mapping is not part
 * of its public API. The kinds are those the service's statements pass, mapped as node-postgres
 * maps them: null, strings, numbers, bigints, booleans, Dates (the columns are `timestamptz`: UTC
 * ISO 8601), bytes (bytea, sent as binary), arrays of these (PostgreSQL's array literal) and plain
 * objects (JSON, for json and jsonb). Anything else is refused before a byte is sent.
 */

export type Parameter = string | Buffer | null

/** An array element in double quotes, its backslashes and quotes escaped. */
const quoted = (text: string) => `"${text.replace(/\\/g, "\\\\").replace(/"/g, "\\\"")}"`

const isPlainObject = (value: object) => {
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/** A non-null value that is not an array or bytes, as text. */
const scalarText = (value: unknown): string => {
  switch (typeof value) {
    case "string":
      return value
    case "number":
    case "bigint":
    case "boolean":
      return String(value)
    case "object":
      if (value instanceof Date) return value.toISOString()
      if (value !== null && isPlainObject(value)) return JSON.stringify(value)
  }
  throw new TypeError(`a statement parameter of an unsupported kind: ${Object.prototype.toString.call(value)}`)
}

/** An array (nested ones too) as PostgreSQL's array literal: `{1,NULL,"a \"b\""}`. */
const arrayLiteral = (values: ReadonlyArray<unknown>): string => {
  const elements = values.map((value) =>
    value === null || value === undefined ?
      "NULL"
      : Array.isArray(value) ?
      arrayLiteral(value)
      : value instanceof Uint8Array ?
      // unquoted, `\\x` reads as `\x`: bytea's hex input
      `\\\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")}`
      : quoted(scalarText(value))
  )
  return `{${elements.join(",")}}`
}

/** One parameter of a Bind message: null, the value's text, or its bytes. */
export const parameterOf = (value: unknown): Parameter =>
  value === null || value === undefined ?
    null
    : Array.isArray(value) ?
    arrayLiteral(value)
    : value instanceof Uint8Array ?
    Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)
    : scalarText(value)
