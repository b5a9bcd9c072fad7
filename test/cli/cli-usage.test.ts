/**
 * The operator CLI with no service to call: its help as read through a pipe, a command word typed
 * wrong answered with the closest command, and an ops listener that cannot be reached. Each command
 * runs as a child process, as `npm run cli` runs it.
 */
import { describe, expect, it } from "vitest"
import { runCli } from "../support/cli.js"

describe("operator CLI usage", () => {
  it("an unreachable ops listener: exit code 1", async () => {
    const result = await runCli(["merchant", "show", "x", "--ops-url", "http://127.0.0.1:1", "--admin-token", "t"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("cannot reach the ops listener")
  })

  it("help reads well when piped: no ANSI codes, no generic filler, usage lines as typed", async () => {
    for (const args of [["--help"], ["merchant", "create", "--help"], ["webhook", "replay", "--help"]]) {
      // NO_COLOR unset: the output is a pipe, and that alone must turn colours off
      const help = await runCli(args, { NO_COLOR: undefined })
      expect(help.code, args.join(" ")).toBe(0)
      expect(help.stdout).not.toContain("\u001b[")
      expect(help.stdout).not.toContain("This setting is optional.")
      expect(help.stdout).not.toContain("A true or false value.")
      const usage = help.stdout.split("\n").find((line) => line.startsWith("$ "))
      const typed = args.filter((a) => !a.startsWith("-")).join(" ")
      expect(usage, args.join(" ")).toMatch(new RegExp(`^\\$ npm run cli -- ${typed}`.trimEnd()))
    }
  })

  it("a command word typed wrong is answered at its own level with the closest command; every refusal begins with error:", async () => {
    const group = await runCli(["merchnt", "list"])
    expect(group.code).toBe(1)
    expect(group.stderr.trim()).toBe(
      `error: unknown command "merchnt" for the CLI; did you mean "merchant"? (one of: merchant, deposit, wallet, catalogue, webhook)`
    )
    const command = await runCli(["merchant", "lst"])
    expect(command.code).toBe(1)
    expect(command.stderr).toMatch(/^error: unknown command "lst" for "merchant"; did you mean "list"\? \(one of: .*\blist\b.*\)$/m)
    // nothing close: no guess
    const far = await runCli(["webhook", "zzzzzz"])
    expect(far.stderr).toMatch(/^error: unknown command "zzzzzz" for "webhook" \(one of: /m)
    const missing = await runCli(["merchant", "create"])
    expect(missing.code).toBe(1)
    expect(missing.stderr.trim()).toBe("error: Missing argument <NAME>")
  })

  it("help shows each option's default, and no line that repeats its choices", async () => {
    const help = await runCli(["deposit", "simulate", "--help"])
    expect(help.stdout).toContain("the network the USDT came over (default: tron)")
    expect(help.stdout).not.toContain("One of the following")
    expect((await runCli(["webhook", "listen", "--help"])).stdout).toContain("port to listen on (default: 4000)")
  })
})
