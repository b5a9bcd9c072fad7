/**
 * Several statements sent to PostgreSQL at once, on one node-postgres client: one write and one
 * round trip instead of one per statement (node-postgres sends a client's queries one after the
 * other, each once the previous one is answered). They run in order, in the extended protocol
 * (parameters bound as node-postgres binds them), and end with one Sync: the
 * first error skips the rest (PostgreSQL discards everything up to the Sync). Outside a
 * transaction they are one implicit transaction, so they stand or fall together. Each distinct
 * text is prepared once per connection, as a named statement (as node-postgres does for a query
 * given a name): the statements of the hot paths are long, and parsing and planning them for
 * every execution cost the server more than running them. (A connection whose prepared statements
 * went out of date, after a migration, is dropped by its user: Database.ts.) It is
 * node-postgres's own extension point (a "submittable", as pg-cursor is), with its own Result for
 * each statement's rows.
 *
 * A statement may be a `COPY ... FROM STDIN` with its rows: they are sent right after its Execute,
 * as one CopyData message and a CopyDone, without waiting for the server's CopyInResponse (the
 * server reads the messages in order; a COPY that fails before it reads them ignores them), so a
 * COPY and the statements after it are one round trip too.
 */
import { createRequire } from "node:module"
import type pg from "pg"

const require = createRequire(import.meta.url)

/** node-postgres's result builder (pg/lib/result.js): parses rows with the client's type parsers. */
interface ResultBuilder {
  readonly rows: Array<unknown>
  command: string | null
  rowCount: number | null
  addFields(fields: ReadonlyArray<unknown>): void
  parseRow(fields: ReadonlyArray<unknown>): unknown
  addRow(row: unknown): void
  addCommandComplete(message: unknown): void
}
const Result: new(rowMode: undefined, types: undefined) => ResultBuilder = require("pg/lib/result.js")
/** node-postgres's mapping of a parameter to its text (or bytes), as it binds a query's values. */
const { prepareValue }: { prepareValue: (value: unknown) => Buffer | string | null | undefined } = require("pg/lib/utils.js")

/** A statement and its parameters; a `COPY ... FROM STDIN` also with its rows (COPY's text format). */
export type PipelinedStatement =
  | readonly [text: string, values: ReadonlyArray<unknown>]
  | readonly [text: string, values: ReadonlyArray<unknown>, copyRows: Buffer]

/** The prepared statements of a connection, as node-postgres records them: name -> text. */
interface PreparingConnection extends pg.Connection {
  readonly parsedStatements: Record<string, string>
}

/**
 * Statement names by text; a text never seen before gets a new name, never given to another text
 * (the map is bounded, though the texts are the code's own, few).
 */
const names = new Map<string, string>()
const MAX_NAMES = 1_000
let named = 0
const statementName = (text: string) => {
  let name = names.get(text)
  if (name === undefined) {
    if (names.size >= MAX_NAMES) names.clear()
    name = `pipelined_${named++}`
    names.set(text, name)
  }
  return name
}

/** A statement's rows, its command tag ("COPY") and the count in the tag (rows copied, updated). */
export interface PipelinedResult {
  readonly rows: ReadonlyArray<unknown>
  readonly command: string | null
  readonly rowCount: number | null
}

/** The statements' results, in order; or the error of the first that failed and its place. */
export type PipelineOutcome =
  | { readonly _tag: "done"; readonly results: ReadonlyArray<PipelinedResult> }
  | { readonly _tag: "failed"; readonly at: number; readonly error: unknown }

/** The connection's end of COPY message (node-postgres's Connection has it; its types do not). */
interface CopyingConnection extends pg.Connection {
  endCopyFrom(): void
}

/**
 * A COPY's rows as one CopyData message, its header written beside it (node-postgres's own
 * `sendCopyFromChunk` copies the rows into a new buffer half as large again), then CopyDone.
 */
const sendCopyRows = (connection: pg.Connection, rows: Buffer): void => {
  const header = Buffer.allocUnsafe(5)
  header[0] = 0x64 // 'd'
  header.writeInt32BE(rows.length + 4, 1)
  connection.stream.write(header)
  connection.stream.write(rows)
  ;(connection as CopyingConnection).endCopyFrom()
}

class Pipeline implements pg.Submittable {
  private readonly results: Array<ResultBuilder>
  private current = 0
  private settled = false
  /** The statements this pipeline prepares, in order; each is recorded once PostgreSQL confirms it. */
  private readonly preparing: Array<readonly [name: string, text: string]> = []
  private confirmed = 0
  private connection: PreparingConnection | undefined
  private readonly onParseComplete = () => {
    const statement = this.preparing[this.confirmed++]
    if (statement !== undefined) this.connection!.parsedStatements[statement[0]] = statement[1]
  }

  constructor(
    private readonly statements: ReadonlyArray<PipelinedStatement>,
    private readonly settle: (outcome: PipelineOutcome) => void
  ) {
    this.results = statements.map(() => new Result(undefined, undefined))
  }

  submit(pgConnection: pg.Connection): void {
    const connection = pgConnection as PreparingConnection
    this.connection = connection
    connection.on("parseComplete", this.onParseComplete)
    connection.stream.cork()
    try {
      for (const [text, values, copyRows] of this.statements) {
        const name = statementName(text)
        // a name already sent in this pipeline is prepared by then (a second Parse of it would fail)
        if (connection.parsedStatements[name] !== text && !this.preparing.some(([sent]) => sent === name)) {
          connection.parse({ text, name, types: [] }, false)
          this.preparing.push([name, text])
        }
        connection.bind({ portal: "", statement: name, values: values.map((value) => prepareValue(value)) }, false)
        connection.describe({ type: "P", name: "" }, false)
        connection.execute({ portal: "" }, false)
        if (copyRows !== undefined) sendCopyRows(connection, copyRows)
      }
      connection.sync()
    } finally {
      connection.stream.uncork()
    }
  }

  handleRowDescription(message: { fields: ReadonlyArray<unknown> }): void {
    this.results[this.current]!.addFields(message.fields)
  }

  handleDataRow(message: { fields: ReadonlyArray<unknown> }): void {
    const result = this.results[this.current]!
    result.addRow(result.parseRow(message.fields))
  }

  handleCommandComplete(message: unknown): void {
    this.results[this.current]!.addCommandComplete(message)
    this.current++
  }

  handleEmptyQuery(): void {
    this.current++
  }

  /** The first failure (node-postgres forgets the active query after an error: nothing more comes here). */
  handleError(error: unknown): void {
    this.finish({ _tag: "failed", at: this.current, error })
  }

  handleReadyForQuery(): void {
    this.finish({ _tag: "done", results: this.results.map((r) => ({ rows: r.rows, command: r.command, rowCount: r.rowCount })) })
  }

  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}

  private finish(outcome: PipelineOutcome) {
    if (this.settled) return
    this.settled = true
    this.connection?.off("parseComplete", this.onParseComplete)
    this.settle(outcome)
  }
}

/**
 * Sends the statements at once on `client` and reports their rows, or where they failed (a broken
 * connection is such a failure: node-postgres reports it to the query in flight).
 */
export const pipelined = (client: pg.ClientBase, statements: ReadonlyArray<PipelinedStatement>): Promise<PipelineOutcome> =>
  new Promise((resolve) => {
    client.query(new Pipeline(statements, resolve))
  })
