/**
 * Every setting of the service (CONTRACT section 1), read through effect/Config.
 * Nothing else in the program reads the environment.
 */
import { Config, ConfigError, ConfigProvider, Effect, Either, Layer, Option, Redacted } from "effect"
import { httpOrigin } from "./Domain/HttpUrl.js"

const nonNegative = (name: string) =>
  Config.number(name).pipe(Config.validate({
    message: `${name} must be a non-negative number`,
    validation: (n) => Number.isFinite(n) && n >= 0
  }))

/** A number of seconds (or per second) where 0 means something: no wait, no churn, no delay. */
const seconds = (name: string, fallback: number) => nonNegative(name).pipe(Config.withDefault(fallback))

/** A period or rate where 0 would be a hot loop or a lock-out for good (a dump rebuilt without end, a bucket never refilled). */
const positive = (name: string, fallback: number) =>
  Config.number(name).pipe(
    Config.withDefault(fallback),
    Config.validate({
      message: `${name} must be a number greater than 0`,
      validation: (n) => Number.isFinite(n) && n > 0
    })
  )

const positiveInt = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({
      message: `${name} must be a positive integer`,
      validation: (n) => n > 0
    })
  )

const retrySchedule = Config.string("WEBHOOK_RETRY_SCHEDULE").pipe(
  Config.withDefault("0,5,300,1800,7200,18000,36000,36000"),
  Config.mapOrFail((text) => {
    const parts = text.split(",").map((s) => s.trim())
    return parts.every((part) => /^\d+(\.\d+)?$/.test(part))
      ? Either.right(parts.map(Number) as ReadonlyArray<number>)
      : Either.left(ConfigError.InvalidData([], "WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds, e.g. 0,5,300"))
  })
)

/** The levels of LOG_LEVEL, as effect's LogLevel labels (lower case); `warning` is read as `warn`. */
export const LOG_LEVELS = ["all", "trace", "debug", "info", "warn", "error", "fatal", "off"] as const

const logLevel = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.map((level) => level.trim().toLowerCase().replace(/^warning$/, "warn")),
  Config.validate({
    message: `LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}`,
    validation: (level) => (LOG_LEVELS as ReadonlyArray<string>).includes(level)
  })
)

/** The shortest ADMIN_TOKEN accepted: the admin API moves money, so a guessable token is refused. */
export const ADMIN_TOKEN_MIN_LENGTH = 32

/** A bearer token must be sendable as one (no whitespace or control characters) and long enough not to be guessed. */
const adminToken = Config.option(
  Config.redacted("ADMIN_TOKEN").pipe(
    Config.validate({
      message: "ADMIN_TOKEN must not contain whitespace or control characters (unset it to have one generated)",
      validation: (token) => /^[\x21-\x7e]*$/.test(Redacted.value(token))
    }),
    Config.validate({
      message:
        `ADMIN_TOKEN is shorter than ${ADMIN_TOKEN_MIN_LENGTH} characters: it guards the admin API, so use a long random value (e.g. \`openssl rand -hex 32\`) or unset it to have one generated`,
      validation: (token) => Redacted.value(token).length >= ADMIN_TOKEN_MIN_LENGTH
    })
  )
)

export interface AppSettings {
  readonly port: number
  readonly host: string
  readonly opsPort: number
  readonly opsHost: string
  readonly adminToken: Option.Option<Redacted.Redacted>
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  readonly dataDir: string
  readonly provider: "simulator"
  readonly simCatalogue: Option.Option<string>
  readonly simCatalogueSize: number
  readonly simChurnPerSecond: number
  readonly simTimeScale: number
  readonly buySyncWaitSeconds: number
  readonly byNameBudgetSeconds: number
  readonly dumpIntervalSeconds: number
  readonly dumpMaxConcurrentDownloads: number
  readonly dumpMemoryMaxMb: number
  readonly feedRetentionHours: number
  readonly rateLimitRps: number
  readonly rateLimitBurst: number
  readonly authFailureRps: number
  readonly authFailureBurst: number
  readonly webhookRetrySchedule: ReadonlyArray<number>
  readonly webhookTimeoutSeconds: number
  readonly webhookAllowPrivateTargets: boolean
  readonly webhookMerchantConcurrency: number
  readonly webhookConcurrency: number
  readonly walletIssuanceEnabled: boolean
  readonly walletSettlementVerified: boolean
  readonly publicUrl: string
  readonly cabinetAllowedOrigins: ReadonlyArray<string>
  readonly sessionIdleMinutes: number
  readonly sessionMaxHours: number
  readonly cabinetLockoutWindowMinutes: number
  readonly cabinetSignInAddressFailures: number
  readonly cabinetPasswordHashConcurrency: number
  readonly cabinetPasswordHashQueue: number
  readonly logLevel: string
  readonly demoMerchant: boolean
  readonly shutdownGraceSeconds: number
}

export const AppConfig: Config.Config<AppSettings> = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  opsPort: Config.port("OPS_PORT").pipe(Config.withDefault(9090)),
  opsHost: Config.string("OPS_HOST").pipe(Config.withDefault("127.0.0.1")),
  adminToken,
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data")),
  provider: Config.literal("simulator")("PROVIDER").pipe(Config.withDefault("simulator" as const)),
  simCatalogue: Config.option(Config.string("SIM_CATALOGUE")),
  simCatalogueSize: Config.integer("SIM_CATALOGUE_SIZE").pipe(
    Config.withDefault(2000),
    Config.validate({
      message: "SIM_CATALOGUE_SIZE must be a non-negative integer",
      validation: (n) => n >= 0
    })
  ),
  // unset is not 5: a fixture's default is 0 (below)
  simChurnPerSecond: Config.option(nonNegative("SIM_CHURN_PER_SECOND")),
  simTimeScale: seconds("SIM_TIME_SCALE", 1),
  buySyncWaitSeconds: seconds("BUY_SYNC_WAIT_SECONDS", 30),
  byNameBudgetSeconds: seconds("BY_NAME_BUDGET_SECONDS", 30),
  dumpIntervalSeconds: positive("DUMP_INTERVAL_SECONDS", 120),
  dumpMaxConcurrentDownloads: positiveInt("DUMP_MAX_CONCURRENT_DOWNLOADS", 32),
  dumpMemoryMaxMb: nonNegative("DUMP_MEMORY_MAX_MB").pipe(Config.withDefault(64)),
  feedRetentionHours: positive("FEED_RETENTION_HOURS", 24),
  rateLimitRps: positive("RATE_LIMIT_RPS", 20),
  rateLimitBurst: positiveInt("RATE_LIMIT_BURST", 100),
  // a storm, not a client's mistakes: thousands of bad keys from one address
  authFailureRps: positive("AUTH_FAILURE_RPS", 100),
  authFailureBurst: positiveInt("AUTH_FAILURE_BURST", 1000),
  webhookRetrySchedule: retrySchedule,
  // an attempt must end well within its claim's lease, which is at most 120 s (spec 3.3)
  webhookTimeoutSeconds: positive("WEBHOOK_TIMEOUT_SECONDS", 10).pipe(Config.validate({
    message: "WEBHOOK_TIMEOUT_SECONDS must be at most 110 (an attempt ends within the 120 s claim window)",
    validation: (n) => n <= 110
  })),
  webhookAllowPrivateTargets: Config.boolean("WEBHOOK_ALLOW_PRIVATE_TARGETS").pipe(Config.withDefault(false)),
  webhookMerchantConcurrency: positiveInt("WEBHOOK_MERCHANT_CONCURRENCY", 4),
  webhookConcurrency: positiveInt("WEBHOOK_CONCURRENCY", 64),
  walletIssuanceEnabled: Config.boolean("WALLET_ISSUANCE_ENABLED").pipe(Config.withDefault(false)),
  // the operator's switch of spec 2.3's "verified settlement": off, no wallet may be deposited to or created
  walletSettlementVerified: Config.boolean("WALLET_SETTLEMENT_VERIFIED").pipe(Config.withDefault(true)),
  publicUrl: Config.option(
    Config.string("PUBLIC_URL").pipe(Config.validate({
      message: "PUBLIC_URL must be an http(s) URL, e.g. https://merchants.example.com",
      validation: (url) => httpOrigin(url) !== undefined
    }))
  ),
  cabinetAllowedOrigins: Config.option(
    Config.string("CABINET_ALLOWED_ORIGINS").pipe(Config.validate({
      message: "CABINET_ALLOWED_ORIGINS must be comma-separated http(s) origins, e.g. https://merchants.example.com",
      validation: (list) => list.split(",").every((origin) => httpOrigin(origin.trim()) === origin.trim())
    }))
  ),
  sessionIdleMinutes: positive("SESSION_IDLE_MINUTES", 30),
  sessionMaxHours: positive("SESSION_MAX_HOURS", 12),
  // the cabinet's brakes: 5 failures of a login's sign-in, or of a merchant's step-up code, within
  // the window lock it; an address's sign-ins may fail this many times a window; hashes at once
  cabinetLockoutWindowMinutes: positive("CABINET_LOCKOUT_WINDOW_MINUTES", 15),
  cabinetSignInAddressFailures: positiveInt("CABINET_SIGNIN_ADDRESS_FAILURES", 20),
  cabinetPasswordHashConcurrency: positiveInt("CABINET_PASSWORD_HASH_CONCURRENCY", 2),
  cabinetPasswordHashQueue: Config.integer("CABINET_PASSWORD_HASH_QUEUE").pipe(
    Config.withDefault(4),
    Config.validate({ message: "CABINET_PASSWORD_HASH_QUEUE must be a non-negative integer", validation: (n) => n >= 0 })
  ),
  logLevel,
  demoMerchant: Config.boolean("DEMO_MERCHANT").pipe(Config.withDefault(true)),
  // long enough for a /buy-sync or /buy-by-name under way at the default budgets (30 s) to answer
  shutdownGraceSeconds: seconds("SHUTDOWN_GRACE_SECONDS", 35)
}).pipe(
  Config.validate({
    message: "PORT and OPS_PORT must differ (one listener each)",
    validation: (c) => c.port !== c.opsPort
  }),
  Config.map((c) => {
    const publicUrl = Option.getOrElse(c.publicUrl, () => `http://${c.host}:${c.port}`).replace(/\/+$/, "")
    return {
      ...c,
      publicUrl,
      cabinetAllowedOrigins: Option.match(c.cabinetAllowedOrigins, {
        onNone: () => [httpOrigin(publicUrl) ?? publicUrl],
        onSome: (list) => list.split(",").map((origin) => origin.trim())
      }),
      // A fixture replaces the synthetic catalogue and defaults churn to 0 (CONTRACT section 1).
      simChurnPerSecond: Option.getOrElse(c.simChurnPerSecond, () => Option.isSome(c.simCatalogue) ? 0 : 5)
    }
  })
)

/** The settings as a service, so layers and tests can read or replace them. */
export class Settings extends Effect.Service<Settings>()("Settings", {
  effect: AppConfig
}) {
  /** Every default but the `overrides` (by variable name), with nothing read from the environment: a test's settings. */
  static readonly Test = (overrides: Readonly<Record<string, string>> = {}) =>
    Layer.effect(Settings, Effect.map(Effect.withConfigProvider(AppConfig, ConfigProvider.fromMap(new Map(Object.entries(overrides)))), Settings.make))
}
