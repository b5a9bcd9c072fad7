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
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ["default"],
    sequence: { sequencer: SlowestFirst }
  }
})
