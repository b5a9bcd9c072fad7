/** The sender's arithmetic (Schedule.ts): the retry schedule and how long a claim holds its events. */
import { describe, expect, it } from "vitest"
import { holding, nextAttemptAt } from "../../src/Webhooks/Schedule.js"

describe("nextAttemptAt", () => {
  const at = new Date("2026-11-26T12:00:00.000Z")
  it("follows the schedule: the wait before attempt n + 1 is its n-th value; past the last there is none", () => {
    const schedule = [0, 5, 300]
    expect(nextAttemptAt(schedule, 1, at)).toEqual(new Date("2026-11-26T12:00:05.000Z"))
    expect(nextAttemptAt(schedule, 2, at)).toEqual(new Date("2026-11-26T12:05:00.000Z"))
    expect(nextAttemptAt(schedule, 3, at)).toBeNull()
    expect(nextAttemptAt([0.2], 1, at)).toBeNull()
  })
})

describe("holding", () => {
  it("never leases for more than 120 s, and the lease covers every round of held attempts with time to record", () => {
    for (const timeout of [0.5, 1, 2, 10, 14, 30, 55, 60, 100, 110]) {
      const { factor, leaseSeconds } = holding(timeout)
      expect(leaseSeconds, `timeout ${timeout}`).toBeLessThanOrEqual(120)
      expect(factor, `timeout ${timeout}`).toBeGreaterThanOrEqual(1)
      expect(factor, `timeout ${timeout}`).toBeLessThanOrEqual(8)
      // an event in the last round still ends (timeout) with 5 s to spare, unless the timeout is near the cap
      if (timeout <= 55) expect((factor + 1) * timeout + 5, `timeout ${timeout}`).toBeLessThanOrEqual(leaseSeconds + 1)
    }
    expect(holding(10)).toEqual({ factor: 8, leaseSeconds: 95 })
    expect(holding(2)).toEqual({ factor: 8, leaseSeconds: 23 })
    expect(holding(100)).toEqual({ factor: 1, leaseSeconds: 120 })
  })
})
