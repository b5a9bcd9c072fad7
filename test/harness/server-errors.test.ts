/**
 * The e2e harness's watch on the service's log: a test fails when the service under test logged an
 * ERROR line or restarted a supervised fiber that the test did not expect. Lines are formatted by
 * the service's own JSON logger, so a change of its format cannot silently blind the watch.
 */
import { Logger, LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { unexpectedErrorLines } from "../support/server.js"

const line = (level: LogLevel.LogLevel, message: string) =>
  Logger.test(Logger.jsonLogger, message).replace(/"logLevel":"[A-Z]+"/, `"logLevel":"${level.label}"`)

describe("the harness's watch on the service's errors", () => {
  it("finds ERROR and FATAL lines, fiber restarts and crashes, and nothing else", () => {
    const output = [
      line(LogLevel.Info, "migrations applied"),
      line(LogLevel.Warning, "a LISTEN connection was lost; listening again"),
      line(LogLevel.Error, "unhandled defect"),
      line(LogLevel.Fatal, "out of memory"),
      line(LogLevel.Warning, "supervised fiber stopped; restarting"),
      line(LogLevel.Warning, "supervised fiber lost its database connection; restarting"),
      "node:events:497",
      "      throw er; // Unhandled 'error' event",
      "plain text"
    ].join("\n")
    const found = unexpectedErrorLines(output, [])
    expect(found).toHaveLength(5)
    expect(found.join("\n")).toContain("unhandled defect")
    expect(found.join("\n")).toContain("out of memory")
    expect(found.join("\n")).toContain("supervised fiber stopped")
    expect(found.join("\n")).toContain("lost its database connection")
    expect(found.join("\n")).toContain("Unhandled 'error' event")
  })

  it("lets through the lines a test expects, and only those", () => {
    const output = [line(LogLevel.Error, "purchase step failed; the lease will expire"), line(LogLevel.Error, "unhandled defect")].join("\n")
    expect(unexpectedErrorLines(output, [/purchase step failed/])).toEqual([expect.stringContaining("unhandled defect")])
  })
})
