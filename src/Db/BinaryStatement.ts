/**
 * One statement as the messages of PostgreSQL's extended protocol (Parse, Bind, Describe, Execute,
 * Sync), its parameters in binary: arrays of text and of int8, and single texts. Written once into
 * one buffer, they go to the embedded database as they are (`PgliteProtocol`). A page of a first
 * reconciliation as a few arrays (`unnest`) costs PGlite about half what the same rows cost as
 * thousands of text parameters of a VALUES list, which its client library encodes one by one
 * (decision 0026).
 */
import type { SqlError } from "@effect/sql"
import { Context, type Effect, type Option } from "effect"

export type BinaryParameter =
  | { readonly type: "text[]"; readonly values: ReadonlyArray<string | null> }
  | { readonly type: "int8[]"; readonly values: ReadonlyArray<number> }
  | { readonly type: "text"; readonly value: string }

const TEXT = 25
const INT8 = 20
const TEXT_ARRAY = 1009
const INT8_ARRAY = 1016
const TWO_32 = 4_294_967_296

const typeOid = (parameter: BinaryParameter) => parameter.type === "text" ? TEXT : parameter.type === "text[]" ? TEXT_ARRAY : INT8_ARRAY

/** The bytes of a parameter's value (without its length word). */
const valueSize = (parameter: BinaryParameter) => {
  if (parameter.type === "text") return Buffer.byteLength(parameter.value, "utf8")
  // dimensions, null flag, element type, then the one dimension's size and lower bound
  let size = parameter.values.length === 0 ? 12 : 20
  if (parameter.type === "int8[]") return size + parameter.values.length * 12
  for (const value of parameter.values) size += 4 + (value === null ? 0 : Buffer.byteLength(value, "utf8"))
  return size
}

/**
 * The messages of one statement, run as one exchange; its rows come back in text. They fill their
 * own ArrayBuffer, which PgliteProtocol hands to PGlite's thread: not to be used after it ran.
 */
export const binaryStatement = (text: string, parameters: ReadonlyArray<BinaryParameter>): Uint8Array => {
  const sizes = parameters.map(valueSize)
  const parse = 4 + 1 + Buffer.byteLength(text, "utf8") + 1 + 2 + 4 * parameters.length
  const bind = 4 + 1 + 1 + 2 + 2 + 2 + sizes.reduce((sum, size) => sum + 4 + size, 0) + 2
  // a buffer of its own, never a slice of node's pool: it is handed to PGlite's thread whole
  const bytes = Buffer.allocUnsafeSlow(1 + parse + 1 + bind + 1 + 4 + 1 + 1 + 1 + 4 + 1 + 4 + 1 + 4)
  let at = 0
  const int32 = (n: number) => (at = bytes.writeInt32BE(n, at))
  const int16 = (n: number) => (at = bytes.writeInt16BE(n, at))
  const string = (s: string) => (at += bytes.write(s, at, "utf8"))
  const cString = (s: string) => {
    string(s)
    bytes[at++] = 0
  }
  const message = (code: string, length: number) => {
    bytes[at++] = code.charCodeAt(0)
    int32(length)
  }
  const int8 = (n: number) => {
    if (!Number.isSafeInteger(n)) throw new RangeError(`not an int8: ${n}`)
    const high = Math.floor(n / TWO_32)
    int32(high)
    at = bytes.writeUInt32BE(n - high * TWO_32, at)
  }

  message("P", parse)
  cString("") // the unnamed statement
  cString(text)
  int16(parameters.length)
  for (const parameter of parameters) int32(typeOid(parameter))

  message("B", bind)
  cString("") // the unnamed portal
  cString("")
  int16(1) // one format code for every parameter: binary
  int16(1)
  int16(parameters.length)
  parameters.forEach((parameter, i) => {
    int32(sizes[i]!)
    if (parameter.type === "text") return string(parameter.value)
    const count = parameter.values.length
    int32(count === 0 ? 0 : 1)
    int32(parameter.type === "text[]" && parameter.values.includes(null) ? 1 : 0)
    int32(parameter.type === "text[]" ? TEXT : INT8)
    if (count > 0) {
      int32(count)
      int32(1)
    }
    if (parameter.type === "int8[]") {
      for (const value of parameter.values) {
        int32(8)
        int8(value)
      }
      return
    }
    for (const value of parameter.values) {
      if (value === null) {
        int32(-1)
        continue
      }
      const lengthAt = at
      at += 4
      string(value)
      bytes.writeInt32BE(at - lengthAt - 4, lengthAt)
    }
  })
  int16(0) // every result column in text

  message("D", 4 + 1 + 1)
  bytes[at++] = "P".charCodeAt(0)
  cString("")
  message("E", 4 + 1 + 4)
  cString("")
  int32(0) // every row
  message("S", 4)
  if (at !== bytes.length) throw new Error(`binaryStatement: wrote ${at} of ${bytes.length} bytes`)
  return bytes
}

/** A statement's rows, each its columns in text (null for NULL). */
export type TextRows = ReadonlyArray<ReadonlyArray<string | null>>

/**
 * Runs `binaryStatement`'s messages on the embedded database (handing their buffer over), in the
 * caller's transaction when it is in one; None on PostgreSQL (its first reconciliation uses COPY).
 */
export class PgliteProtocol extends Context.Tag("PgliteProtocol")<
  PgliteProtocol,
  Option.Option<(messages: Uint8Array) => Effect.Effect<TextRows, SqlError.SqlError>>
>() {}
