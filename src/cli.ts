/**
 * The operator CLI (CONTRACT 2): `npm run cli -- <command>` wraps the admin API of the ops
 * listener over HTTP. Every admin command takes `--json` (print the raw response body) and
 * otherwise prints a short summary; an answer other than 2xx prints its error code and message on
 * stderr and exits with 1. The commands live in src/Cli/, one file per group.
 */
// Module paths rather than the packages' indexes: a CLI run loads only what it uses.
import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, HashMap, HashSet, Layer } from "effect"
import { root } from "./Cli/Admin.js"
import { catalogue } from "./Cli/Catalogue.js"
import { deposit } from "./Cli/Deposit.js"
import { withReadableConsole } from "./Cli/HelpConsole.js"
import { merchant } from "./Cli/Merchant.js"
import { wallet } from "./Cli/Wallet.js"
import { webhook } from "./Cli/Webhook.js"

/** A group's word and its commands' words, for the answer to a typo. */
const wordsOf = <Name extends string, R, E, A>(group: Command.Command<Name, R, E, A>) =>
  [Array.from(HashSet.values(Command.getNames(group)))[0]!, Array.from(HashMap.keys(Command.getSubcommands(group)))] as const
const tree = new Map([wordsOf(merchant), wordsOf(deposit), wordsOf(wallet), wordsOf(catalogue), wordsOf(webhook)])

const cli = root.pipe(
  Command.withSubcommands([merchant, deposit, wallet, catalogue, webhook]),
  Command.run({ name: "merchant purchasing operator CLI", version: "0.1.0" })
)

const MainLive = Layer.mergeAll(NodeContext.layer, NodeHttpClient.layer)

cli(process.argv).pipe(
  // Our failures are printed here; the CLI's own validation errors are printed by @effect/cli.
  Effect.tapError((error) => error._tag === "CliFailure" ? Console.error(`error: ${error.message}`) : Effect.void),
  withReadableConsole(tree),
  Effect.provide(MainLive),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
