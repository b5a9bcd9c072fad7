/**
 * Settings (CONTRACT 1): defaults, and invalid values refused at start-up with a message naming
 * the variable, including values that would start a service that misbehaves (a hot loop, a
 * bucket never refilled, an admin API nobody can use).
 */
import { ConfigProvider, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { AppConfig } from "../../src/Config.js"

const load = (env: Record<string, string>) => Effect.runSyncExit(Effect.withConfigProvider(AppConfig, ConfigProvider.fromMap(new Map(Object.entries(env)))))

const failureOf = (env: Record<string, string>) => {
  const exit = load(env)
  return Exit.isFailure(exit) ? String(exit.cause) : "started"
}

describe("settings", () => {
  it("churn defaults to 5 a second, and to 0 with a fixture unless SIM_CHURN_PER_SECOND says otherwise", () => {
    const churn = (env: Record<string, string>) => Exit.getOrElse(Exit.map(load(env), (c) => c.simChurnPerSecond), () => -1)
    expect(churn({})).toBe(5)
    expect(churn({ SIM_CATALOGUE: "/tmp/fixture.json" })).toBe(0)
    expect(churn({ SIM_CATALOGUE: "/tmp/fixture.json", SIM_CHURN_PER_SECOND: "3" })).toBe(3)
    expect(churn({ SIM_CHURN_PER_SECOND: "0" })).toBe(0)
  })

  it("refuses values that would start a misbehaving service, naming the variable", () => {
    const cases: ReadonlyArray<[Record<string, string>, string]> = [
      [{ LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of"],
      [{ SIM_CATALOGUE_SIZE: "-5" }, "SIM_CATALOGUE_SIZE must be a non-negative integer"],
      [{ SIM_CHURN_PER_SECOND: "-1" }, "SIM_CHURN_PER_SECOND must be a non-negative number"],
      [{ ADMIN_TOKEN: "" }, "ADMIN_TOKEN is shorter than 32 characters"],
      [{ ADMIN_TOKEN: "x" }, "ADMIN_TOKEN is shorter than 32 characters"],
      [{ ADMIN_TOKEN: "a".repeat(31) }, "ADMIN_TOKEN is shorter than 32 characters"],
      [{ ADMIN_TOKEN: " ".repeat(40) }, "ADMIN_TOKEN must not contain whitespace"],
      [{ ADMIN_TOKEN: "two words of an admin token that is long" }, "ADMIN_TOKEN must not contain whitespace"],
      [{ DUMP_INTERVAL_SECONDS: "0" }, "DUMP_INTERVAL_SECONDS must be a number greater than 0"],
      [{ RATE_LIMIT_RPS: "0" }, "RATE_LIMIT_RPS must be a number greater than 0"],
      [{ AUTH_FAILURE_RPS: "0" }, "AUTH_FAILURE_RPS must be a number greater than 0"],
      [{ FEED_RETENTION_HOURS: "0" }, "FEED_RETENTION_HOURS must be a number greater than 0"],
      [{ WEBHOOK_TIMEOUT_SECONDS: "0" }, "WEBHOOK_TIMEOUT_SECONDS must be a number greater than 0"],
      [{ WEBHOOK_TIMEOUT_SECONDS: "111" }, "WEBHOOK_TIMEOUT_SECONDS must be at most 110"],
      [{ WEBHOOK_MERCHANT_CONCURRENCY: "0" }, "WEBHOOK_MERCHANT_CONCURRENCY must be a positive integer"],
      [{ WEBHOOK_CONCURRENCY: "1.5" }, "WEBHOOK_CONCURRENCY"],
      [{ WEBHOOK_RETRY_SCHEDULE: "" }, "WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds"],
      [{ WEBHOOK_RETRY_SCHEDULE: "1,,2" }, "WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds"],
      [{ WEBHOOK_RETRY_SCHEDULE: "0x10" }, "WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds"],
      [{ PORT: "9000", OPS_PORT: "9000" }, "PORT and OPS_PORT must differ"]
    ]
    for (const [env, message] of cases) expect([env, failureOf(env)]).toEqual([env, expect.stringContaining(message)])
  })

  it("accepts the documented forms", () => {
    const documented: ReadonlyArray<Record<string, string>> = [
      {},
      { LOG_LEVEL: "WARNING" },
      { LOG_LEVEL: "debug" },
      { LOG_LEVEL: "off" },
      { ADMIN_TOKEN: "a".repeat(32) },
      { SIM_CATALOGUE_SIZE: "0", SIM_TIME_SCALE: "0", BUY_SYNC_WAIT_SECONDS: "0" },
      { WEBHOOK_RETRY_SCHEDULE: " 0, 5 ,300.5" },
      { DUMP_INTERVAL_SECONDS: "0.5" },
      { WEBHOOK_TIMEOUT_SECONDS: "110", WEBHOOK_MERCHANT_CONCURRENCY: "1", WEBHOOK_CONCURRENCY: "512" }
    ]
    for (const env of documented) expect([env, failureOf(env)]).toEqual([env, "started"])
    expect(Exit.map(load({ LOG_LEVEL: "WARNING" }), (c) => c.logLevel)).toEqual(Exit.succeed("warn"))
    expect(Exit.map(load({ WEBHOOK_RETRY_SCHEDULE: " 0, 5 ,300.5" }), (c) => c.webhookRetrySchedule)).toEqual(Exit.succeed([0, 5, 300.5]))
  })
})
