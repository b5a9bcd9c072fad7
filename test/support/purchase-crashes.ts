/**
 * What the purchase crash tests share (CONTRACT 1, 5): a slower simulated provider, so that a kill
 * lands while purchases are in flight; databases the test owns (they outlive the servers killed on
 * them) and servers killed at the end; waiting until a merchant's purchases are all done.
 */
import { afterEach } from "vitest"
import { type FreshDatabase, freshDatabase } from "./database.js"
import { type Detail, listPurchases, type Merchant, pollUntil, PURCHASE_ENV } from "./purchases.js"
import { type RunningServer, startServer } from "./server.js"

/** Slower simulated provider: a purchase takes about 1.5 to 5 s, reversals come 6 s after completion. */
export const CRASH_ENV = { ...PURCHASE_ENV, SIM_TIME_SCALE: "0.2" }

/**
 * Registers, in the calling test file, the clean-up after each test of what it started (last first,
 * failures ignored): `cleanup` takes any step; `ownDatabase` is a database the test owns (dropped at
 * the end, not when a server stops), `serve` a server on it, killed at the end.
 */
export const crashHarness = () => {
  const cleanup: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined)
  })
  const ownDatabase = async () => {
    const database = await freshDatabase()
    cleanup.push(() => database.drop())
    return database
  }
  const serve = async (database: FreshDatabase, env: Record<string, string> = CRASH_ENV) => {
    const server = await startServer({ env, database })
    cleanup.push(() => server.stop("SIGKILL"))
    return server
  }
  return { cleanup, ownDatabase, serve }
}

/** The merchant's purchases once there are `count` and every one is `done`. */
export const waitAll = (server: RunningServer, m: Merchant, count: number, done: (d: Detail) => boolean, timeoutMs = 120_000) =>
  pollUntil(
    `${count} purchases done`,
    async () => {
      const list = await listPurchases(server, m)
      return list.length === count && list.every(done) ? list : undefined
    },
    timeoutMs,
    200
  )
