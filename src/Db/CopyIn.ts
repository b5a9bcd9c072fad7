/**
 * COPY ... FROM STDIN on a node-postgres client: rows sent as one block of PostgreSQL's text format,
 * which the server reads several times faster than the same rows as an INSERT's parameters (no
 * parameter to bind, no VALUES list to analyse). For bulk writes of new rows only: a COPY inserts,
 * it cannot update. Like Pipeline.ts it is node-postgres's own extension point (a "submittable").
 */
import type pg from "pg"

export type CopyOutcome =
  | { readonly _tag: "done"; readonly rows: number }
  | { readonly _tag: "failed"; readonly error: unknown }

/** The connection's COPY messages (node-postgres's Connection has them; its types do not). */
interface CopyingConnection extends pg.Connection {
  sendCopyFromChunk(chunk: Buffer): void
  endCopyFrom(): void
}

class CopyIn implements pg.Submittable {
  private rows = 0
  private error: unknown = undefined
  private settled = false

  constructor(
    private readonly text: string,
    private readonly data: Buffer,
    private readonly settle: (outcome: CopyOutcome) => void
  ) {}

  submit(connection: pg.Connection): void {
    connection.query(this.text)
  }

  handleCopyInResponse(connection: pg.Connection): void {
    const copying = connection as CopyingConnection
    copying.sendCopyFromChunk(this.data)
    copying.endCopyFrom()
  }

  handleCommandComplete(message: { readonly text?: string }): void {
    // "COPY 1000"
    this.rows = Number(message.text?.split(" ")[1] ?? 0)
  }

  handleError(error: unknown): void {
    // the server still sends ReadyForQuery after an error, except when the connection broke
    this.error = error
    this.finish({ _tag: "failed", error })
  }

  handleReadyForQuery(): void {
    this.finish(this.error === undefined ? { _tag: "done", rows: this.rows } : { _tag: "failed", error: this.error })
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}

  private finish(outcome: CopyOutcome) {
    if (this.settled) return
    this.settled = true
    this.settle(outcome)
  }
}

/** Runs `COPY <table> (<columns>) FROM STDIN` (`text`) with `data` (text-format rows) on `client`. */
export const copyIn = (client: pg.ClientBase, text: string, data: Buffer): Promise<CopyOutcome> =>
  new Promise((resolve) => {
    client.query(new CopyIn(text, data, resolve))
  })

const SPECIAL = /[\\\t\n\r]/g
const escaped = (c: string) => c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"

/** Text already in COPY's format as bytes (UTF-8: node encodes an ASCII text at a copy's speed). */
const bytesOf = (text: string): Buffer => Buffer.from(text, "utf8")

/** A text in COPY's text format: backslash, tab, line feed and carriage return escaped. */
const copyText = (text: string): string =>
  // looked for one by one first: a scan for a character is several times faster than the regex's
  // (an item's JSON has no control character, and often no backslash)
  text.includes("\\") || text.includes("\t") || text.includes("\n") || text.includes("\r") ? text.replace(SPECIAL, escaped) : text

/** A field's bytes in COPY's text format. */
export const copyField = (text: string): Buffer => bytesOf(copyText(text))

/**
 * Rows in COPY's text format, as bytes: tab-separated, `\N` for null. Kept as pieces and joined
 * once: one string of a thousand rows cost several times more to encode.
 */
export class CopyRows {
  private readonly pieces: Array<Buffer> = []

  /** One row; a Buffer is a field as `copyField` made it (one text written in several rows is encoded once). */
  add(values: ReadonlyArray<string | number | null | Buffer>): void {
    let text = ""
    for (let i = 0; i < values.length; i++) {
      const value = values[i]!
      if (i > 0) text += "\t"
      if (Buffer.isBuffer(value)) {
        this.pieces.push(bytesOf(text), value)
        text = ""
      } else {
        text += value === null ? "\\N" : typeof value === "number" ? String(value) : copyText(value)
      }
    }
    this.pieces.push(bytesOf(text + "\n"))
  }

  bytes(): Buffer {
    return Buffer.concat(this.pieces)
  }
}
