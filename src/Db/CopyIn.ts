/**
 * Rows for `COPY ... FROM STDIN`, as one block of PostgreSQL's text format, which the server reads
 * several times faster than the same rows as an INSERT's parameters (no parameter to bind, no
 * VALUES list to analyse). For bulk writes of new rows only: a COPY inserts, it cannot update. The
 * block is sent as one of a pipeline's statements (Pipeline.ts).
 */
const SPECIAL = /[\\\t\n\r]/g
const escaped = (c: string) => c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"

/** A text in COPY's text format: backslash, tab, line feed and carriage return escaped. */
const copyText = (text: string): string =>
  // looked for one by one first: a scan for a character is several times faster than the regex's
  // (an item's JSON has no control character, and often no backslash)
  text.includes("\\") || text.includes("\t") || text.includes("\n") || text.includes("\r") ? text.replace(SPECIAL, escaped) : text

/**
 * A field already in COPY's text format, kept apart from its row's other values: a long text (an
 * item's JSON) is not joined into its row's string, only encoded into the block.
 */
export class CopyField {
  readonly byteLength: number
  constructor(private readonly text: string) {
    this.byteLength = Buffer.byteLength(text, "utf8")
  }

  /** Writes the field into `out` at `at`. */
  writeInto(out: Buffer, at: number): void {
    out.write(this.text, at, "utf8")
  }
}

export const copyField = (text: string): CopyField => new CopyField(copyText(text))

/**
 * Rows in COPY's text format: tab-separated, `\N` for null. Kept as texts and written into one
 * buffer at the end: a Buffer a field (and a Buffer.concat) made a first reconciliation's garbage
 * collector run for the memory outside the heap, and one string of a thousand rows cost several
 * times more to encode.
 */
export class CopyRows {
  private readonly pieces: Array<string | CopyField> = []
  private byteLength = 0

  /** One row of values and fields. */
  add(values: ReadonlyArray<string | number | null | CopyField>): void {
    let text = ""
    for (let i = 0; i < values.length; i++) {
      const value = values[i]!
      if (i > 0) text += "\t"
      if (value instanceof CopyField) {
        this.push(text)
        this.pieces.push(value)
        this.byteLength += value.byteLength
        text = ""
      } else {
        text += value === null ? "\\N" : typeof value === "number" ? String(value) : copyText(value)
      }
    }
    this.push(text + "\n")
  }

  private push(text: string) {
    if (text.length === 0) return
    this.pieces.push(text)
    this.byteLength += Buffer.byteLength(text, "utf8")
  }

  /** The rows as UTF-8 bytes, in one buffer (from `buffers`, to give back once copied, if given). */
  bytes(buffers?: CopyBuffers): Buffer {
    const out = buffers === undefined ? Buffer.allocUnsafe(this.byteLength) : buffers.take(this.byteLength)
    let at = 0
    for (const piece of this.pieces) {
      if (typeof piece === "string") {
        at += out.write(piece, at, "utf8")
      } else {
        piece.writeInto(out, at)
        at += piece.byteLength
      }
    }
    return out
  }
}

/**
 * Buffers for COPY's rows, taken and given back once their COPY has ended. A first reconciliation
 * writes a buffer of about a megabyte a page: each new one was memory outside V8's heap, for
 * which V8 marked the whole growing heap every few dozen pages (`--trace-incremental-marking`
 * gives "external memory pressure" as the reason): with two a page, 17 full collections in a
 * start of 1,000,000 items, 5 with the buffers taken again.
 */
export class CopyBuffers {
  private readonly free: Array<ArrayBufferLike> = []

  /** `keep`: how many given-back buffers are kept for the next pages (the rest are garbage). */
  constructor(private readonly keep: number) {}

  /** A buffer of `size` bytes, its contents undefined. */
  take(size: number): Buffer {
    const at = this.free.findIndex((free) => free.byteLength >= size)
    if (at >= 0) return Buffer.from(this.free.splice(at, 1)[0]!, 0, size)
    // a little larger than asked: the next pages are about as large, some a little larger
    const owned = Buffer.allocUnsafeSlow(Math.ceil(size * 1.25))
    return Buffer.from(owned.buffer, 0, size)
  }

  /** Gives back a buffer `take` gave, no longer read or written by anything. */
  give(buffer: Buffer): void {
    if (this.free.length < this.keep) this.free.push(buffer.buffer)
  }
}
