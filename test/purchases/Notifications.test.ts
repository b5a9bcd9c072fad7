/**
 * Purchase change notifications (src/Purchases/Notifications.ts) on a fresh test database (PGlite,
 * or PostgreSQL when DATABASE_URL is set): one notification may carry several purchase ids; each
 * reaches the subscribers on its own, and it wakes the worker unless every id in it was announced
 * as this process's own change (`changingHere`).
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { PurchaseNotifications } from "../../src/Purchases/Notifications.js"
import { PurchasesRepo } from "../../src/Purchases/Repo.js"
import { inProcess } from "../support/in-process.js"

const NotificationsTest = inProcess(Layer.merge(PurchaseNotifications.Default, PurchasesRepo.Default))

/** Sends the notification of these ids, as a statement that changes them does (PurchasesRepo.notifying). */
const notify = (ids: string) => Effect.flatMap(Effect.all([SqlClient.SqlClient, PurchasesRepo]), ([sql, repo]) => sql`SELECT ${repo.notifying(ids)}`)

/** Waits until the process listens (its LISTEN connection is set up a moment after the layer is). */
const listening = Effect.scoped(Effect.gen(function*() {
  const notifications = yield* PurchaseNotifications
  const subscription = yield* notifications.subscribe
  for (;;) {
    yield* notify("probe")
    const got = yield* subscription.take.pipe(Effect.timeoutOption("200 millis"))
    if (Option.isSome(got)) return
  }
}))

layer(NotificationsTest, { timeout: 60_000, excludeTestServices: true })("purchase change notifications", (it) => {
  it.effect("a notification of several ids reaches subscribers as each id, in order", () =>
    Effect.scoped(Effect.gen(function*() {
      const notifications = yield* PurchaseNotifications
      yield* listening
      const subscription = yield* notifications.subscribe
      yield* notify("a1,b2,c3")
      yield* notify("d4")
      const seen: Array<string> = []
      for (let i = 0; i < 4; i++) {
        seen.push(yield* subscription.take.pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`got ${seen}`) })))
      }
      expect(seen).toEqual(["a1", "b2", "c3", "d4"])
    })))

  it.effect("wakes the worker unless every id of the notification is this process's own change", () =>
    Effect.gen(function*() {
      const notifications = yield* PurchaseNotifications
      yield* listening
      // drain any wake-up left by earlier notifications
      yield* notifications.awaitWork.pipe(Effect.timeoutOption("300 millis"))
      yield* notifications.changingHere("own-1")
      yield* notifications.changingHere("own-2")
      yield* notify("own-1,own-2")
      expect(yield* notifications.awaitWork.pipe(Effect.timeoutOption("1 second"))).toEqual(Option.none())
      yield* notifications.changingHere("own-3")
      yield* notify("own-3,other")
      expect(Option.isSome(yield* notifications.awaitWork.pipe(Effect.timeoutOption("10 seconds")))).toBe(true)
    }))
})
