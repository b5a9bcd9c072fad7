/**
 * Which source files of the service run in a window, measured in the running service through its
 * inspector (node --inspect): V8's precise coverage counts each function's calls since the last
 * take, and each called function of the bundle is traced to its TypeScript file through the
 * bundle's source maps (node:module's SourceMap). The order in which functions first run comes
 * from breakpoints at their starts that record each hit and never pause.
 */
import { readFileSync } from "node:fs"
import type { Debugger, Profiler, Runtime } from "node:inspector"
import { SourceMap } from "node:module"
import { relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import WebSocket from "ws"
import { ROOT } from "./paths.js"
import { pollUntil } from "./polling.js"

export interface Inspector {
  readonly send: <A>(method: string, params?: object) => Promise<A>
  readonly close: () => void
}

/** Connects to the inspector whose address node printed ("Debugger listening on ws://...") in `output`. */
export const connectInspector = async (output: () => string): Promise<Inspector> => {
  const url = await pollUntil("the inspector's address in the server's output", () => Promise.resolve(/Debugger listening on (ws:\/\/\S+)/.exec(output())?.[1]))
  const socket = new WebSocket(url)
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve())
    socket.once("error", reject)
  })
  let nextId = 1
  const waiting = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>()
  socket.on("message", (data: WebSocket.RawData) => {
    const message = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } }
    const pending = message.id === undefined ? undefined : waiting.get(message.id)
    if (pending === undefined) return
    waiting.delete(message.id!)
    if (message.error !== undefined) pending.reject(new Error(message.error.message))
    else pending.resolve(message.result)
  })
  return {
    send: <A>(method: string, params: object = {}) =>
      new Promise<A>((resolve, reject) => {
        const id = nextId++
        waiting.set(id, { resolve: (result) => resolve(result as A), reject })
        socket.send(JSON.stringify({ id, method, params }))
      }),
    close: () => socket.close()
  }
}

/** Starts precise coverage with call counts: `take` gives the calls since the previous take, and starts them again from zero. */
export const startCoverage = async (inspector: Inspector) => {
  await inspector.send("Profiler.enable")
  await inspector.send("Profiler.startPreciseCoverage", { callCount: true, detailed: true })
  return async (): Promise<ReadonlyArray<Profiler.ScriptCoverage>> =>
    (await inspector.send<Profiler.TakePreciseCoverageReturnType>("Profiler.takePreciseCoverage")).result
}

/**
 * Resolves once the service's event loop has come round (its setImmediate ran): the task that was
 * running when it was asked has ended. The inspector can answer in the middle of a task (a
 * request's answer can reach the client before the code after its `end()` ran).
 */
export const eventLoopTurn = async (inspector: Inspector) => {
  await inspector.send("Runtime.evaluate", { expression: "new Promise((resolve) => setImmediate(resolve))", awaitPromise: true })
}

/** A bundled script's source map, and where each of its lines starts. */
interface MappedScript {
  readonly map: SourceMap
  readonly mapDir: string
  readonly lineStarts: ReadonlyArray<number>
}

const scripts = new Map<string, MappedScript>()

const mappedScript = (path: string): MappedScript => {
  const known = scripts.get(path)
  if (known !== undefined) return known
  const text = readFileSync(path, "utf8")
  const lineStarts = [0]
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lineStarts.push(i + 1)
  const script = { map: new SourceMap(JSON.parse(readFileSync(`${path}.map`, "utf8"))), mapDir: resolve(path, ".."), lineStarts }
  scripts.set(path, script)
  return script
}

/** The 0-based line and column of a UTF-16 offset (V8's and the source map's unit). */
const positionOf = (lineStarts: ReadonlyArray<number>, offset: number) => {
  let low = 0
  let high = lineStarts.length - 1
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if (lineStarts[middle]! <= offset) low = middle
    else high = middle - 1
  }
  return { line: low, column: offset - lineStarts[low]! }
}

/** A place in a bundled script, as the inspector gives one (0-based). */
export interface ScriptLocation {
  readonly scriptId: string
  readonly lineNumber: number
  readonly columnNumber: number
}

/** A function of src/ that was called: where it is in src/ (1-based line) and in the bundle, and its calls. */
export interface FunctionRun {
  readonly file: string
  readonly line: number
  readonly name: string
  readonly calls: number
  readonly bundled: { readonly start: ScriptLocation; readonly end: ScriptLocation }
}

/**
 * The functions of src/ called at least once in `coverage` (file paths relative to the
 * repository); scripts other than the bundle's (dist/bundle) and sources in node_modules are left out.
 */
export const functionsRun = (coverage: ReadonlyArray<Profiler.ScriptCoverage>): ReadonlyArray<FunctionRun> => {
  const bundle = resolve(ROOT, "dist/bundle")
  const run: Array<FunctionRun> = []
  for (const script of coverage) {
    if (!script.url.startsWith("file://")) continue
    const path = fileURLToPath(script.url)
    if (!path.startsWith(`${bundle}/`)) continue
    const called = script.functions.filter((fn) => fn.ranges[0]!.count > 0)
    if (called.length === 0) continue
    const { lineStarts, map, mapDir } = mappedScript(path)
    const at = (offset: number): ScriptLocation => {
      const { column, line } = positionOf(lineStarts, offset)
      return { scriptId: script.scriptId, lineNumber: line, columnNumber: column }
    }
    for (const fn of called) {
      const { endOffset, startOffset } = fn.ranges[0]!
      const start = at(startOffset)
      const entry = map.findEntry(start.lineNumber, start.columnNumber)
      if (!("originalSource" in entry)) continue
      const file = relative(ROOT, resolve(mapDir, entry.originalSource))
      if (!file.startsWith("src/")) continue
      run.push({ file, line: entry.originalLine + 1, name: fn.functionName, calls: fn.ranges[0]!.count, bundled: { start, end: at(endOffset) } })
    }
  }
  return run
}

/** The calls of each file's functions. */
export const callsPerFile = (run: ReadonlyArray<FunctionRun>): Map<string, number> => {
  const calls = new Map<string, number>()
  for (const fn of run) calls.set(fn.file, (calls.get(fn.file) ?? 0) + fn.calls)
  return calls
}

/** The folders of `files` (src/ itself for a file at its top). */
export const foldersOf = (files: Iterable<string>): ReadonlyArray<string> => [...new Set([...files].map((file) => file.slice(0, file.lastIndexOf("/"))))].sort()

/** The service's global through which the breakpoints' conditions record the hits (only while a window is recorded). */
const HITS = "__firstRunsRecorded"

export interface Breakpoints {
  /** The order in which the functions first ran while `during` ran. */
  readonly firstRunsDuring: <A>(during: () => Promise<A>) => Promise<{ readonly order: ReadonlyArray<FunctionRun>; readonly result: A }>
  /** Takes the breakpoints out. */
  readonly remove: () => Promise<void>
}

/**
 * A breakpoint at the start of each of `functions` whose condition records the function and is
 * false: the service never pauses. A hit is recorded only while `firstRunsDuring` runs (to the
 * end of the task then running).
 */
export const placeBreakpoints = async (inspector: Inspector, functions: ReadonlyArray<FunctionRun>): Promise<Breakpoints> => {
  await inspector.send("Debugger.enable")
  // the requests go at once (the inspector answers them in order): placing them takes one round trip
  const firsts = await Promise.all(functions.map(async (fn) => {
    // the function's first place to break, in its own body: a place at its very start can be its
    // definition's, in the function around it (`f=(a)=>...` breaks there as the outer one runs)
    const { locations } = await inspector.send<Debugger.GetPossibleBreakpointsReturnType>(
      "Debugger.getPossibleBreakpoints",
      { ...fn.bundled, restrictToFunction: true }
    )
    return locations[0]
  }))
  // two functions can share their first place (a function that only returns another)
  const byPlace = new Map<string, { readonly location: Debugger.BreakLocation; readonly index: number }>()
  firsts.forEach((location, index) => {
    const key = location === undefined ? "" : `${location.scriptId}:${location.lineNumber}:${location.columnNumber}`
    if (location !== undefined && !byPlace.has(key)) byPlace.set(key, { location, index })
  })
  await Promise.all([...byPlace.values()].map(({ index, location }) =>
    inspector.send<Debugger.SetBreakpointReturnType>("Debugger.setBreakpoint", {
      location: { scriptId: location.scriptId, lineNumber: location.lineNumber, columnNumber: location.columnNumber },
      condition: `globalThis.${HITS}?.push(${index}), false`
    })
  ))
  const evaluate = async (expression: string) =>
    (await inspector.send<Runtime.EvaluateReturnType>("Runtime.evaluate", { expression, returnByValue: true })).result.value as unknown
  return {
    firstRunsDuring: async (during) => {
      await evaluate(`globalThis.${HITS} = []`)
      try {
        const result = await during()
        await eventLoopTurn(inspector)
        const hits = await evaluate(`globalThis.${HITS}`) as ReadonlyArray<number>
        return { order: [...new Set(hits)].map((index) => functions[index]!), result }
      } finally {
        await evaluate(`delete globalThis.${HITS}`)
      }
    },
    // taking the debugger away takes its breakpoints
    remove: () => inspector.send("Debugger.disable")
  }
}
