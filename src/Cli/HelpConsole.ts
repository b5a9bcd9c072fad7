/**
 * The console the CLI prints through, for people: the help drops @effect/cli's generic lines
 * ("A true or false value.", "This setting is optional."), shows usage as it is typed
 * (`npm run cli -- …`), and carries no ANSI codes when the output is not a terminal (a pipe, a file,
 * a log).
 */
import { Config, type Console, Effect, Option } from "effect"

/** What @effect/cli says of every value of a type: nothing an operator needs. */
const FILLER = new Set([
  "A true or false value.",
  "A user-defined piece of text.",
  "A user-defined piece of text that is confidential.",
  "An integer.",
  "A floating point number.",
  "This setting is optional."
])

// eslint-disable-next-line no-control-regex -- ANSI escapes start with ESC: matching them is the point
const ANSI = /\x1b\[[0-9;]*m/g

/** The words typed up to the command a usage line names (`create` of `merchant create --help`), or none for the root. */
const commandPath = (command: string): string => {
  const words = process.argv.slice(2).filter((arg) => !arg.startsWith("-"))
  const at = words.indexOf(command)
  return at < 0 ? "" : ` ${words.slice(0, at + 1).join(" ")}`
}

/** A help text as people should read it; other output passes unchanged but for ANSI off a terminal. */
export const readable = (text: string, terminal: boolean): string => {
  const plain = text.replace(ANSI, "")
  const isHelp = /^\s*USAGE\s*$/m.test(plain)
  const out = terminal ? text : plain
  if (!isHelp) return out
  return out
    .split("\n")
    // a filler line and the blank line after it
    .filter((line, index, lines) =>
      !FILLER.has(line.replace(ANSI, "").trim()) && !(line.trim() === "" && FILLER.has((lines[index - 1] ?? "").replace(ANSI, "").trim()))
    )
    .map((line) => {
      const usage = line.replace(ANSI, "").match(/^\$ (\S+)(.*)$/)
      return usage === null ? line : `$ npm run cli --${commandPath(usage[1]!)}${usage[2]}`
    })
    .join("\n")
}

const render = (args: ReadonlyArray<unknown>, terminal: boolean) => args.map((a) => (typeof a === "string" ? readable(a, terminal) : a))

/** Colours only on a terminal, and never with NO_COLOR set. */
const wrap = (base: Console.Console, noColor: boolean): Console.Console => {
  const terminal = process.stdout.isTTY === true && !noColor
  const errTerminal = process.stderr.isTTY === true && !noColor
  return {
    ...base,
    log: (...args) => base.log(...render(args, terminal)),
    error: (...args) => base.error(...render(args, errTerminal)),
    unsafe: {
      ...base.unsafe,
      log: (...args) => base.unsafe.log(...render(args, terminal)),
      error: (...args) => base.unsafe.error(...render(args, errTerminal))
    }
  }
}

const noColor = Config.option(Config.string("NO_COLOR")).pipe(Effect.map(Option.isSome), Effect.orElseSucceed(() => false))

/** Runs `self` printing through the readable console. */
export const withReadableConsole = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(noColor, (off) => Effect.consoleWith((base) => Effect.withConsole(self, wrap(base, off))))
