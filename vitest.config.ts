import { defineConfig } from "vitest/config"
import SlowestFirst from "./test/support/sequencer.js"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: two test files at a time, each in its own process.
    pool: "forks",
    // A worker runs its files one after another in one process: loading the modules again for
    // every file cost about 2 s of each (116 s of a CI phase's 474 s on PGlite). No test changes
    // process-wide state (environment, mocks), and each starts its own servers and databases.
    isolate: false,
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ["default"],
    sequence: { sequencer: SlowestFirst }
  }
})
