/**
 * The order test files start in. Two workers share the suite, so the longest files must start
 * first or the run ends with one worker alone on a long file. Vitest orders by the durations of its
 * last run when it has them (its cache); a clean clone (CI) has none, and file size is a poor
 * guess: the files below were the slowest in a whole run on PGlite (2026-12-02), started first, in this order.
 */
import { relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

const SLOWEST_FIRST = [
  "test/e2e/purchases-crash.test.ts",
  "test/e2e/abuse.test.ts",
  "test/e2e/purchases-crash-by-name.test.ts",
  "test/e2e/catalogue-stream.test.ts",
  "test/cli/cli.test.ts",
  "test/e2e/webhooks-delivery.test.ts",
  "test/e2e/cabinet-page.test.ts",
  "test/e2e/smoke.test.ts",
  "test/e2e/webhooks-crash.test.ts",
  "test/e2e/graceful-stop.test.ts",
  "test/e2e/wallets-switches.test.ts",
  "test/purchases/ledger-model.test.ts",
  "test/e2e/buy-path.test.ts",
  "test/e2e/contract-fuzz.test.ts",
  "test/e2e/catalogue-dump.test.ts",
  "test/e2e/webhooks-fairness.test.ts",
  "test/e2e/pglite-crash.test.ts",
  "test/e2e/purchases-shutdown.test.ts"
]

export default class SlowestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const byCache = await super.sort(files)
    const cached = files.every((file) =>
      this.ctx.cache.getFileTestResults(`${file.project.name}:${relative(this.ctx.config.root, file.moduleId)}`) !== undefined
    )
    if (cached) return byCache
    const rank = (file: TestSpecification) => {
      const at = SLOWEST_FIRST.indexOf(relative(this.ctx.config.root, file.moduleId))
      return at < 0 ? SLOWEST_FIRST.length : at
    }
    // a stable sort: the rest keep vitest's own order
    return byCache.map((file, index) => ({ file, index })).sort((a, b) => rank(a.file) - rank(b.file) || a.index - b.index).map((x) => x.file)
  }
}
