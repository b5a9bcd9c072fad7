/**
 * The console the CLI prints through, for people: the help drops @effect/cli's generic lines
 * ("A true or false value.", "This setting is optional."), shows usage as it is typed
 * (`npm run cli -- …`), and carries no ANSI codes when the output is not a terminal (a pipe, a file,
 * a log). Errors all begin with `error:`; a command word typed wrong is named at its own level,
 * with the closest command (@effect/cli names the root's commands for a typo in a group's).
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

/** A filler line; "One of the following: a, b" repeats the choices the option's line shows (`--network tron | bsc`). */
const isFiller = (line: string) => {
  const plain = line.replace(ANSI, "").trim()
  return FILLER.has(plain) || plain.startsWith("One of the following: ")
}

/** The words typed up to the command a usage line names (`create` of `merchant create --help`), or none for the root. */
const commandPath = (command: string): string => {
  const words = process.argv.slice(2).filter((arg) => !arg.startsWith("-"))
  const at = words.indexOf(command)
  return at < 0 ? "" : ` ${words.slice(0, at + 1).join(" ")}`
}

/** A help text (its USAGE heading), as opposed to a message. */
const isHelpText = (plain: string) => /^\s*USAGE\s*$/m.test(plain)

/** A help text as people should read it; other output passes unchanged but for ANSI off a terminal. */
export const readable = (text: string, terminal: boolean): string => {
  const plain = text.replace(ANSI, "")
  const isHelp = isHelpText(plain)
  const out = terminal ? text : plain
  if (!isHelp) return out
  return out
    .split("\n")
    // a filler line and the blank line after it
    .filter((line, index, lines) => !isFiller(line) && !(line.trim() === "" && isFiller(lines[index - 1] ?? "")))
    .map((line) => {
      const usage = line.replace(ANSI, "").match(/^\$ (\S+)(.*)$/)
      return usage === null ? line : `$ npm run cli --${commandPath(usage[1]!)}${usage[2]}`
    })
    .join("\n")
}

/** The CLI's command words: the groups, and each group's commands. */
export type CommandTree = ReadonlyMap<string, ReadonlyArray<string>>

/** Edit distance (insertions, deletions, substitutions, adjacent swaps): how far a typo is from a name. */
const distance = (a: string, b: string): number => {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** The name closest to `word`, when it is close enough to be what was meant. */
export const closest = (word: string, names: ReadonlyArray<string>): string | undefined => {
  const ranked = names.map((name) => ({ name, far: distance(word, name) })).sort((x, y) => x.far - y.far)
  const best = ranked[0]
  return best !== undefined && best.far <= Math.max(1, Math.floor(best.name.length / 3)) ? best.name : undefined
}

/**
 * The refusal of the first command word of `words` that is not a command at its level, or
 * undefined when every command word is known.
 */
export const unknownCommand = (words: ReadonlyArray<string>, tree: CommandTree): string | undefined => {
  const [group, command] = words.filter((word) => !word.startsWith("-"))
  const at = (level: string, word: string, names: ReadonlyArray<string>) => {
    const near = closest(word, names)
    return `unknown command "${word}" for ${level}${near === undefined ? "" : `; did you mean "${near}"?`} (one of: ${names.join(", ")})`
  }
  if (group === undefined) return undefined
  const commands = tree.get(group)
  if (commands === undefined) return at("the CLI", group, [...tree.keys()])
  if (command !== undefined && commands.length > 0 && !commands.includes(command)) return at(`"${group}"`, command, commands)
  return undefined
}

/** A message on stderr: an error, worded as every error of the CLI is (`error: …`). */
export const asError = (text: string, words: ReadonlyArray<string>, tree: CommandTree): string => {
  const trimmed = text.trim()
  if (isHelpText(trimmed) || trimmed === "" || trimmed.startsWith("error:")) return text
  const typo = trimmed.startsWith("Invalid subcommand") ? unknownCommand(words, tree) : undefined
  return `error: ${typo ?? trimmed}`
}

const render = (args: ReadonlyArray<unknown>, terminal: boolean) => args.map((a) => (typeof a === "string" ? readable(a, terminal) : a))

/** Colours only on a terminal, and never with NO_COLOR set. */
const wrap = (base: Console.Console, noColor: boolean, tree: CommandTree): Console.Console => {
  const terminal = process.stdout.isTTY === true && !noColor
  const errTerminal = process.stderr.isTTY === true && !noColor
  const words = process.argv.slice(2)
  const renderError = (args: ReadonlyArray<unknown>) => render(args, errTerminal).map((a) => (typeof a === "string" ? asError(a, words, tree) : a))
  return {
    ...base,
    log: (...args) => base.log(...render(args, terminal)),
    error: (...args) => base.error(...renderError(args)),
    unsafe: {
      ...base.unsafe,
      log: (...args) => base.unsafe.log(...render(args, terminal)),
      error: (...args) => base.unsafe.error(...renderError(args))
    }
  }
}

const noColor = Config.option(Config.string("NO_COLOR")).pipe(Effect.map(Option.isSome), Effect.orElseSucceed(() => false))

/** Runs `self` printing through the readable console; `tree` names the commands typos are matched against. */
export const withReadableConsole = (tree: CommandTree) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(noColor, (off) => Effect.consoleWith((base) => Effect.withConsole(self, wrap(base, off, tree))))
