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
 * node-postgres's own extension point (a "submittable", as pg-cursor is), with node-postgres's
 * exported Result for each statement's rows; its parameters are bound by Parameters.ts. Only pg's
 * public exports are used: the statements this module prepared are recorded here, not in the
 * connection.
 *
 * A statement may be a `COPY ... FROM STDIN` with its rows: they are sent right after its Execute,
 * as one CopyData message and a CopyDone, without waiting for the server's CopyInResponse (the
 * server reads the messages in order; a COPY that fails before it reads them ignores them), so a
 * COPY and the statements after it are one round trip too.
 */
import pg from "pg"
import { type Parameter, parameterOf } from "./Parameters.js"

/**
 * `pg.Result`, node-postgres's exported result, with the methods its own Query calls to build it
 * (its types declare only the fields): it parses rows with pg's type parsers.
 */
interface ResultBuilder extends pg.Result {
  addFields(fields: ReadonlyArray<unknown>): void
  parseRow(fields: ReadonlyArray<unknown>): unknown
  addRow(row: unknown): void
  addCommandComplete(message: unknown): void
}
/** Rows as objects (any row mode but "array"), parsed by pg's type parsers, as a query's are by default. */
const newResult = (): ResultBuilder => new pg.Result("object", pg.types) as ResultBuilder

/** A statement and its parameters; a `COPY ... FROM STDIN` also with its rows (COPY's text format). */
export type PipelinedStatement =
  | readonly [text: string, values: ReadonlyArray<unknown>]
  | readonly [text: string, values: ReadonlyArray<unknown>, copyRows: Buffer]

/** The statements this module prepared on each connection: name -> text. */
const preparedOn = new WeakMap<pg.Connection, Map<string, string>>()
const preparedStatements = (connection: pg.Connection) => {
  let prepared = preparedOn.get(connection)
  if (prepared === undefined) {
    prepared = new Map()
    preparedOn.set(connection, prepared)
  }
  return prepared
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

/** CopyDone: 'c' and its length, 4. */
const COPY_DONE = Buffer.from([0x63, 0, 0, 0, 4])

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
  connection.stream.write(COPY_DONE)
}

class Pipeline implements pg.Submittable {
  private readonly results: Array<ResultBuilder>
  /** Each statement's parameters, mapped before anything is sent: a value that cannot be sent fails the pipeline whole. */
  private readonly parameters: ReadonlyArray<Array<Parameter>>
  private current = 0
  private settled = false
  /** The statements this pipeline prepares, in order; each is recorded once PostgreSQL confirms it. */
  private readonly preparing: Array<readonly [name: string, text: string]> = []
  private confirmed = 0
  private connection: pg.Connection | undefined
  private readonly onParseComplete = () => {
    const statement = this.preparing[this.confirmed++]
    if (statement !== undefined && this.connection !== undefined) preparedStatements(this.connection).set(statement[0], statement[1])
  }

  constructor(
    private readonly statements: ReadonlyArray<PipelinedStatement>,
    private readonly settle: (outcome: PipelineOutcome) => void
  ) {
    this.parameters = statements.map(([, values]) => values.map(parameterOf))
    this.results = statements.map(newResult)
  }

  submit(connection: pg.Connection): void {
    this.connection = connection
    const prepared = preparedStatements(connection)
    connection.on("parseComplete", this.onParseComplete)
    connection.stream.cork()
    try {
      for (const [i, [text, , copyRows]] of this.statements.entries()) {
        const name = statementName(text)
        // a name already sent in this pipeline is prepared by then (a second Parse of it would fail)
        if (prepared.get(name) !== text && !this.preparing.some(([sent]) => sent === name)) {
          connection.parse({ text, name, types: [] }, false)
          this.preparing.push([name, text])
        }
        connection.bind({ portal: "", statement: name, values: this.parameters[i]! }, false)
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
