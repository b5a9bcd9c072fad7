/**
 * The embedded database (PGlite) killed mid-write: a service on PGlite is killed with SIGKILL while
 * buys and deposits (some of them repeats) are in flight, and started again on the same DATA_DIR,
 * round after round. It starts every time (the dead process's `pg.lock` is taken over), a second
 * live process on the directory is still refused, and nothing a client was answered 2xx for is
 * lost: every purchase and deposit answered is found, a repeat of its custom_id or tx_id finds it
 * again, no purchase or credit is doubled, each merchant's balance adds up to exactly what was
 * made, and a catalogue page written beside them is there whole or not at all.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type CataloguePage, type DepositRequest, lockPid, record, send, type Sent, verifyAfterRestart } from "../support/crash-writes.js"
import { type FreshDatabase, freshDatabase } from "../support/database.js"
import {
  balanceOf,
  buyBody,
  getPurchase,
  isTerminal,
  itemOf,
  listPurchases,
  loadItems,
  type Merchant,
  pollUntil,
  PURCHASE_ENV,
  sentCentsFor,
  sleep,
  uniqueName
} from "../support/purchases.js"
import { type RunningServer, startServer } from "../support/server.js"

/**
 * Kill-and-restart rounds: 3 in CI (a round, its start, load and checks, takes about 8-10 s on two
 * cores); set it to 10 or more by hand to look for a rarer fault.
 */
const ROUNDS = 3
const MERCHANTS = 3
/** Requests kept in flight while a round runs, so that the kill always lands among some. */
const CONCURRENT = 6
/** 2xx answers a round waits for before the kill (a count, not a time: the machine may be slow). */
const ANSWERS_BEFORE_KILL = 30
/** New items each round, one per new buy. */
const ITEMS_PER_ROUND = 40
/** Each merchant's first credit, far above what its buys spend. */
const FIRST_CREDIT_CENTS = 100_000

/** Items of each catalogue page written beside the buys, all under one name. */
const PAGE_ITEMS = 200

const onPglite = !process.env["DATABASE_URL"]

describe.runIf(onPglite)(
  onPglite
    ? "the embedded database killed with SIGKILL mid-write, restarted on its DATA_DIR"
    : "the embedded database killed mid-write (PGlite only: DATABASE_URL is set)",
  () => {
    let database: FreshDatabase | undefined
    let server: RunningServer | undefined
    afterAll(async () => {
      await server?.stop("SIGKILL").catch(() => undefined)
      await database?.drop()
    })

    it(`${ROUNDS} rounds: every start succeeds, and every purchase and credit answered 2xx is there exactly once`, async () => {
      const db = database = await freshDatabase()
      const start = () => startServer({ env: PURCHASE_ENV, database: db })
      const requests: Array<Sent> = []
      const faults: Array<string> = []

      let current = server = await start()
      const merchants: Array<Merchant> = []
      for (let i = 0; i < MERCHANTS; i++) {
        const created = await current.createMerchant()
        const m = { id: created.id, apiKey: created.apiKey }
        merchants.push(m)
        const first: DepositRequest = { kind: "deposit", m, txId: `first-${m.id}`, sentCents: sentCentsFor(FIRST_CREDIT_CENTS) }
        requests.push(first)
        const res = await send(current, first)
        record(first, res.status, res.json, res.text, faults)
      }

      // a second process on the same directory while the first runs: refused, and the first goes on
      await expect(start()).rejects.toThrow(`is in use by another process (pid ${current.process.pid})`)
      expect(lockPid(db.dataDir)).toBe(current.process.pid)
      await balanceOf(current, merchants[0]!)

      for (let round = 1; round <= ROUNDS; round++) {
        // ---- load, and a kill in the middle of it
        const prices = Array.from({ length: ITEMS_PER_ROUND }, (_, i) => 100 + i)
        const itemIds = await loadItems(current, prices.map((price) => itemOf(price)))
        const thisRound: Array<Sent> = []
        let made = 0
        let answers = 0
        const next = (): Sent => {
          const n = made++
          // every fourth a repeat of one sent before in this round
          if (n % 4 === 3 && thisRound.length > 0) return thisRound[(n * 7) % thisRound.length]!
          const m = merchants[n % MERCHANTS]!
          const itemId = itemIds[n]
          const request: Sent = n % 3 === 0 || itemId === undefined
            ? { kind: "deposit", m, txId: `tx-${round}-${n}-${m.id}`, sentCents: 1_000 + n }
            : { kind: "buy", m, body: buyBody({ itemId, maxPrice: 2, customId: `buy-${round}-${n}` }), priceCents: prices[n]! }
          thisRound.push(request)
          requests.push(request)
          return request
        }
        const pages: Array<CataloguePage> = []
        let killed = false
        let reached = () => {}
        const enough = new Promise<void>((resolve) => reached = resolve)
        const running = current
        const worker = async () => {
          while (!killed) {
            const request = next()
            const res = await send(running, request).catch(() => undefined)
            // no answer: the process died with the request in flight, whose outcome the client does not know
            if (res === undefined) continue
            record(request, res.status, res.json, res.text, faults)
            if (++answers >= ANSWERS_BEFORE_KILL || faults.length > 0) reached()
          }
        }
        // a writer of catalogue pages beside them: the embedded database is mostly inside a transaction
        const catalogueWriter = async () => {
          while (!killed) {
            const page: CataloguePage = { name: uniqueName("Crash Page"), answered: false }
            pages.push(page)
            const items = Array.from({ length: PAGE_ITEMS }, () => itemOf(5_000, { market_hash_name: page.name }))
            const res = await running.admin("/admin/catalogue/items", { method: "PUT", body: { items } }).catch(() => undefined)
            if (res !== undefined && res.status !== 200) faults.push(`catalogue page answered ${res.status}: ${res.text.slice(0, 500)}`)
            page.answered = res !== undefined
          }
        }
        // the load goes on a little past the answers, a different while each round, so that the kill
        // lands at another step of the writes (what is checked holds wherever it lands)
        const killer = async () => {
          await enough
          await sleep((round * 13) % 40)
          killed = true
          await running.stop("SIGKILL")
        }
        await Promise.all([...Array.from({ length: CONCURRENT }, worker), catalogueWriter(), killer()])
        expect(faults).toEqual([])
        // the dead process's lock is left behind
        expect(lockPid(db.dataDir)).toBe(running.process.pid)

        // ---- the restart
        if (round % 3 === 2 && process.platform === "linux") {
          // a lock whose pid a process that is not the service now has (a pid reused after a reboot),
          // told apart by its start time: taken over
          const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
          writeFileSync(join(db.dataDir, "pg.lock"), JSON.stringify({ pid: process.pid, boot, started: "1", nonce: "0123456789abcdef" }))
        }
        if (round % 3 === 0) {
          // an older version's lock, its pid alone, naming a live process: it cannot be told from a
          // running service, so the start is refused, and the message says which file to remove
          writeFileSync(join(db.dataDir, "pg.lock"), String(process.pid))
          await expect(start()).rejects.toThrow(`remove ${join(db.dataDir, "pg.lock")}`)
          rmSync(join(db.dataDir, "pg.lock"))
        }
        current = server = await start()
        expect(lockPid(db.dataDir)).toBe(current.process.pid)
        await verifyAfterRestart(current, merchants, requests, thisRound, pages, { pageItems: PAGE_ITEMS, concurrent: CONCURRENT })
      }

      // ---- every purchase finishes, and nothing stays on hold
      const last = current
      for (const m of merchants) {
        await pollUntil(
          `every purchase of ${m.id} done`,
          async () => {
            const list = await listPurchases(last, m)
            return list.every((p) => isTerminal(p.status)) ? list : undefined
          },
          120_000,
          200
        )
        const balance = await balanceOf(last, m)
        expect(balance.onHold).toBe(0)
      }
      for (const p of requests) if (p.kind === "buy") expect((await getPurchase(last, p.m, p.purchaseId!)).status).toBe("completed")
      expect(await last.stop()).toBe(0)
      server = undefined
    }, 600_000)
  }
)
