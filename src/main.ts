/** Entry point: settings, logging and the service's layers; nothing else. */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Logger, LogLevel, RuntimeFlags } from "effect"
import { Settings } from "./Config.js"
import { DatabaseLive } from "./Db/Database.js"

// The service's modules load while the database opens, not after: the import starts here, and the
// embedded PGlite opens in its own thread meanwhile (most of a cold start, about 0.7 s).
const app = import("./App.js")
const AppLive = Layer.unwrapEffect(Effect.map(Effect.promise(() => app), (module) => module.AppLive))

const levels: ReadonlyArray<LogLevel.LogLevel> = LogLevel.allLevels

/** JSON lines on stdout at LOG_LEVEL (info by default). */
const LoggingLive = Layer.unwrapEffect(Effect.map(Settings, (settings) =>
  Layer.mergeAll(
    Logger.json,
    Logger.minimumLogLevel(
      // Config.ts checked it is one of these
      levels.find((l) => l.label.toLowerCase() === settings.logLevel) ?? LogLevel.Info
    )
  )))

/** A log line now, outside the running program (a signal's arrival), with its logger and level. */
const logNow = (message: string, annotations: Record<string, unknown>) =>
  Effect.runFork(Effect.logInfo(message).pipe(Effect.annotateLogs(annotations), Effect.provide(LoggingLive), Effect.provide(Settings.Default)))

// runMain interrupts the service on the first of these; say so at once (the drain can take
// SHUTDOWN_GRACE_SECONDS). The listeners stay for the whole drain: a signal often comes twice (a
// terminal's Ctrl-C or systemd's stop reach both `npm start` and node, and npm passes its own on),
// and with no listener left node's default would end the process there, in the middle of the drain.
let stopping = false
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    if (stopping) return logNow("already shutting down: the drain goes on (SIGKILL ends it)", { signal })
    stopping = true
    logNow("shutting down: the API stops taking connections and drains, then the background work stops", { signal })
  })
}

Layer.launch(Layer.provide(AppLive, DatabaseLive)).pipe(
  Effect.onInterrupt(() => Effect.logInfo("stopped")),
  // No trace exporter is configured: spans would be built for nothing on every query and request.
  Effect.provide(Layer.setTracerEnabled(false)),
  Effect.provide(LoggingLive),
  Effect.provide(RuntimeFlags.enableRuntimeMetrics),
  Effect.provide(Settings.Default),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
