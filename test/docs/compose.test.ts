/**
 * docker-compose.yml as the README shows it: the service alone on its embedded database by
 * default, and on PostgreSQL 16 with the `postgres` profile; each waits longer than the service's
 * drain before it kills. (There is no Docker daemon here: scripts/check-docker-build.mjs, run by
 * CI, replays the Dockerfile itself.)
 */
import { ConfigProvider, Effect } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { parse } from "yaml"
import { AppConfig } from "../../src/Config.js"
import { ROOT } from "../support/paths.js"

interface ComposeService {
  readonly image?: string
  readonly build?: string
  readonly profiles?: ReadonlyArray<string>
  readonly environment?: Record<string, string>
  readonly depends_on?: Record<string, { condition: string }>
  readonly stop_grace_period?: string
  readonly ports?: ReadonlyArray<string>
}
const compose = parse(readFileSync(join(ROOT, "docker-compose.yml"), "utf8"), { merge: true }) as {
  services: Record<string, ComposeService>
}
const readme = readFileSync(join(ROOT, "README.md"), "utf8")
/** The services `docker compose [--profile P] up` starts (all of them: no service named). */
const started = (profile?: string) =>
  Object.entries(compose.services).filter(([, s]) => s.profiles === undefined || (profile !== undefined && s.profiles.includes(profile)))

describe("docker-compose.yml", () => {
  it("without a profile runs the service alone, on its embedded database, from the Dockerfile", () => {
    expect(started().map(([name]) => name)).toEqual(["service"])
    const service = compose.services["service"]!
    expect(service.build).toBe(".")
    expect(service.environment?.["DATABASE_URL"]).toBeUndefined()
    expect(service.ports).toEqual(["8080:8080", "127.0.0.1:9090:9090"])
  })

  it("the postgres profile runs it on PostgreSQL 16, once that is healthy; the README shows the command", () => {
    const postgres = compose.services["postgres"]!
    const service = compose.services["service-postgres"]!
    expect(postgres.profiles).toEqual(["postgres"])
    expect(postgres.image).toBe("postgres:16")
    expect(service.profiles).toEqual(["postgres"])
    expect(service.environment?.["DATABASE_URL"]).toMatch(/^postgres:\/\/[^@]+@postgres:5432\//)
    expect(service.depends_on).toEqual({ postgres: { condition: "service_healthy" } })
    // the shared settings came through the merge, the admin token among them
    expect(service.environment?.["ADMIN_TOKEN"]).toBe(compose.services["service"]!.environment?.["ADMIN_TOKEN"])
    expect(readme).toContain("docker compose --profile postgres up --build service-postgres")
  })

  it("waits longer than the service's drain (SHUTDOWN_GRACE_SECONDS by default) before it kills", () => {
    const config = Effect.runSync(Effect.withConfigProvider(AppConfig, ConfigProvider.fromMap(new Map())))
    for (const name of ["service", "service-postgres"]) {
      const grace = compose.services[name]!.stop_grace_period
      expect(grace, name).toMatch(/^\d+s$/)
      expect(Number.parseInt(grace!, 10), name).toBeGreaterThan(config.shutdownGraceSeconds)
    }
  })
})
