/** Entry point: settings, logging and the service's layers; nothing else. */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger, LogLevel, RuntimeFlags } from "effect"
import { AppLive } from "./App.js"
import { Settings } from "./Config.js"

const levels: ReadonlyArray<LogLevel.LogLevel> = LogLevel.allLevels

/** JSON lines on stdout at LOG_LEVEL (info by default). */
const LoggingLive = Layer.unwrapEffect(Effect.map(Settings, (settings) =>
  Layer.mergeAll(
    Logger.json,
    Logger.minimumLogLevel(
      levels.find((l) => l.label.toLowerCase() === settings.logLevel.toLowerCase().replace(/^warning$/, "warn")) ?? LogLevel.Info
    )
  )
))

Layer.launch(AppLive).pipe(
  // No trace exporter is configured: spans would be built for nothing on every query and request.
  Effect.provide(Layer.setTracerEnabled(false)),
  Effect.provide(LoggingLive),
  Effect.provide(RuntimeFlags.enableRuntimeMetrics),
  Effect.provide(Settings.Default),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
