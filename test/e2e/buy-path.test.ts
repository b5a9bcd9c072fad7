/**
 * The source files one POST /buy runs in the service, from the socket to the answer, measured with
 * V8's precise coverage through the inspector and traced to src/ through the bundle's source maps
 * (support/inspector-coverage.ts). The target: a POST /buy passes at most 12 files in at most 4
 * folders of src/. It is printed (met or not), not asserted, as are the lists it is judged on: every
 * file that ran while the buy was answered, and the buy's own path (the files of the background
 * fibers the buy wakes left out), each in the order its files first ran in another buy (from just
 * before its request was sent: a background poll that ran first comes first). An idle window shows
 * what the service runs with no request at all.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  callsPerFile,
  connectInspector,
  eventLoopTurn,
  foldersOf,
  type FunctionRun,
  functionsRun,
  type Inspector,
  placeBreakpoints,
  startCoverage
} from "../support/inspector-coverage.js"
import { buyBody, cents, fund, type Merchant, pollUntil, sleep } from "../support/purchases.js"
import { fastLaneAnswers, type RunningServer, startServer } from "../support/server.js"

const onPostgreSql = process.env["DATABASE_URL"] !== undefined && process.env["DATABASE_URL"] !== ""
const WARM_UP_BUYS = 20
/** Longer than a key's merchant is kept in memory (src/Merchants/Merchants.ts: AUTH_CACHE_TTL_MS). */
const KEY_KEPT_MS = 2_100
/** Buys at most for the measured buy and the ordered buy together (one is tried again when HttpApi answered it). */
const MEASURED_BUYS = 8
const TARGET = { files: 12, folders: 4 }

/**
 * Files of the work a buy wakes beside its answer, or that runs on its own: the purchase worker
 * and its notifications, the webhook sender (its claims, pacing, schedule, targets and attempts),
 * the LISTEN streams that wake them, the catalogue's feed, engine, sync and dump, buy-by-name's
 * recovery, the cabinet's sweep, the fiber registry, deposits.
 */
const BACKGROUND = [
  /^src\/Purchases\/(Worker\w*|Notifications|BuyByName|CyclesRepo)\.ts$/,
  /^src\/Webhooks\/(Sender|AttemptQueue|Deliver|Pacing|Schedule|Targets)\w*\.ts$/,
  /^src\/Db\/Listen\.ts$/,
  /^src\/Catalogue\/(Stream|Engine|Sync|Dump\w*)\.ts$/,
  /^src\/Cabinet\/Brakes\.ts$/,
  /^src\/Ops\/Fibers\.ts$/,
  /^src\/Deposits\//
]
const isBackground = (file: string) => BACKGROUND.some((pattern) => pattern.test(file))

let server: RunningServer
let inspector: Inspector
let takeCoverage: Awaited<ReturnType<typeof startCoverage>>
beforeAll(async () => {
  server = await startServer({
    env: {
      SIM_CHURN_PER_SECOND: "0",
      SIM_CATALOGUE_SIZE: "50",
      NODE_OPTIONS: "--inspect=127.0.0.1:0",
      RATE_LIMIT_RPS: "100000",
      RATE_LIMIT_BURST: "100000"
    }
  })
  inspector = await connectInspector(server.output)
  takeCoverage = await startCoverage(inspector)
})
afterAll(async () => {
  inspector?.close()
  await server?.stop()
})

/** Waits until each purchase reached its end (completed or failed): its background work is done. */
const settled = async (m: Merchant, ids: ReadonlyArray<string>) => {
  for (const id of ids) {
    await pollUntil(
      `purchase ${id} at its end`,
      async () => {
        const { status } = (await server.api(`/purchases/${id}`, { key: m.apiKey })).json as { status: string }
        return status === "completed" || status === "failed" ? true : undefined
      },
      120_000,
      100
    )
  }
}

/**
 * One window's files with their calls and the count of files and folders, printed as one block:
 * in the order they first ran in `order` (files that did not run there last), or by name.
 */
const report = (title: string, run: ReadonlyArray<FunctionRun>, order?: ReadonlyArray<FunctionRun>) => {
  const calls = callsPerFile(run)
  const ordered = [...new Set((order ?? []).map((fn) => fn.file))].filter((file) => calls.has(file))
  const files = [...ordered, ...[...calls.keys()].filter((file) => !ordered.includes(file)).sort()]
  const folders = foldersOf(files)
  const note = (file: string) => order === undefined || ordered.includes(file) ? "" : " (not run in the ordered buy)"
  console.log(
    `${title}: ${files.length} files in ${folders.length} folders (${folders.join(", ")})\n${
      files.map((file, i) => `  ${i + 1}. ${file} (${calls.get(file)} calls)${note(file)}`).join("\n")
    }`
  )
  return { files, folders }
}

describe("the source files one POST /buy runs", () => {
  it("lists every file run while one buy is answered, and the buy's own path", { timeout: 240_000 }, async () => {
    const created = await server.createMerchant()
    const m: Merchant = { id: created.id, apiKey: created.apiKey }
    const listed = await server.merchant(m.apiKey).call((client) => client.catalogue.listItems({ urlParams: { limit: 50 } }))
    // instant items first: their purchases reach their end soonest, and the service is quiet again
    const items = [...listed.items].sort((a, b) => Number(b.delivery_type === "instant") - Number(a.delivery_type === "instant"))
      .slice(0, WARM_UP_BUYS + MEASURED_BUYS)
    expect(items).toHaveLength(WARM_UP_BUYS + MEASURED_BUYS)
    await fund(server, m, items.reduce((sum, item) => sum + cents(item.price), 0) + 100)
    const buy = async (item: (typeof items)[number]) => {
      const res = await server.api("/buy", { method: "POST", key: m.apiKey, body: buyBody({ itemId: item.id, maxPrice: item.price + 1 }) })
      expect(res.status, res.text).toBe(201)
      return (res.json as { purchase_id: string }).purchase_id
    }

    // warm-up: the fast handler knows the merchant's key, and each step of a buy has run before
    await settled(m, await Promise.all(items.slice(0, WARM_UP_BUYS).map(buy)))

    // what runs with no request: the background's timers and polls
    await takeCoverage()
    await sleep(1_000)
    const idle = functionsRun(await takeCoverage())

    /**
     * Reads the key's merchant again just before a buy: the entry kept in memory expires, and from
     * half its age a use reads it again in the background; fresh, the fast handler answers the buy
     * with no read of its own.
     */
    const readKey = async () => {
      await sleep(KEY_KEPT_MS)
      expect((await server.api("/balance", { key: m.apiKey })).status).toBe(200)
    }
    /**
     * Buys one item after the other until the fast handler answered one, or none is left: what
     * `measure` gave for the last buy, and whether the fast handler answered it. A service so slow
     * that the key's entry expired before the buy sends it to HttpApi: a loaded machine, or the
     * first buy with the breakpoints below (the first evaluations of their conditions are slow).
     */
    let next = WARM_UP_BUYS
    const untilFast = async <A>(measure: (buyOne: () => Promise<string>) => Promise<A>) => {
      for (;;) {
        const fastBefore = await fastLaneAnswers(server, "/buy")
        const item = items[next++]!
        const result = await measure(() => buy(item))
        const fast = await fastLaneAnswers(server, "/buy") === fastBefore + 1
        if (fast || next === items.length) return { result, fast }
      }
    }

    const measured = await untilFast(async (buyOne) => {
      await readKey()
      await takeCoverage()
      const id = await buyOne()
      // the code after the answer's `end()` (its metrics) ends the task the answer was sent in
      await eventLoopTurn(inspector)
      const run = functionsRun(await takeCoverage())
      await settled(m, [id])
      return run
    })
    const window = measured.result
    // another buy with a breakpoint at each function the measured one ran: the order they first
    // run in (the breakpoints slow the service down: they are placed once the key was read)
    const ordered = await untilFast(async (buyOne) => {
      await readKey()
      const breakpoints = await placeBreakpoints(inspector, window)
      try {
        return (await breakpoints.firstRunsDuring(buyOne)).order
      } finally {
        await breakpoints.remove()
      }
    })
    const order = ordered.fast ? ordered.result : undefined

    console.log(
      `database: ${onPostgreSql ? "PostgreSQL" : "PGlite"}; buys measured: ${next - WARM_UP_BUYS}; ${
        order === undefined ? "no ordered buy was answered by the fast handler: files by name" : "files in the order first run in the ordered buy"
      }`
    )
    report("idle: 1 s with no request, by name", idle)
    report("run while the buy was answered", window, order)
    const path = report("the buy's own path (background fibers' files left out)", window.filter((fn) => !isBackground(fn.file)), order)
    const met = path.files.length <= TARGET.files && path.folders.length <= TARGET.folders
    console.log(`target: at most ${TARGET.files} files in at most ${TARGET.folders} folders: ${met ? "met" : "not met"}`)

    expect(measured.fast).toBe(true)
    expect(path.files).toEqual(expect.arrayContaining(["src/FastLane.ts", "src/Purchases/BuyEngine.ts"]))
    expect(path.files).toContain(onPostgreSql ? "src/Db/Pipeline.ts" : "src/Db/Pglite.ts")
    // the breakpoints were hit: the order is measured
    if (order !== undefined) expect(order.map((fn) => fn.file)).toContain("src/FastLane.ts")
  })
})
