/**
 * What a process holds of the webhook events it claimed, and the loop that starts their attempts:
 * every claimed event until its result is recorded (or it is given back); of those, the ones
 * waiting for an attempt (per merchant, in claim order) and the attempts in flight (per merchant
 * and in all). Attempts are node callbacks, not fibers (thousands start a second), and an attempt
 * can end inside its own start: a pre-flight refusal (no webhook URL, a refused one) ends at once.
 */
import type { ClaimedEvent } from "./Deliveries.js"

export interface HeldEvent extends ClaimedEvent {
  readonly leaseEndsAt: number
}

export interface AttemptQueueSettings {
  /** Attempts in flight per merchant (WEBHOOK_MERCHANT_CONCURRENCY). */
  readonly perMerchant: number
  /** Attempts in flight in all (WEBHOOK_CONCURRENCY). */
  readonly total: number
  /** An event whose lease ends sooner than this is given back unattempted (its result could not be recorded). */
  readonly leaseNeededMs: number
  /** Whether one more attempt may start now (the pacer's budget, Pacing.ts). */
  readonly mayStart: () => boolean
  /** Starts an attempt. Its end is reported through `ended`, perhaps before `start` returns. */
  readonly start: (event: HeldEvent) => void
}

export const makeAttemptQueue = (settings: AttemptQueueSettings) => {
  const held = new Map<string, HeldEvent>()
  const waiting = new Map<string, Array<HeldEvent>>()
  const inFlight = new Map<string, number>()
  let inFlightTotal = 0
  const givenBack: Array<HeldEvent> = []

  /**
   * One pass over the merchants in turn (the one served least recently first), starting attempts
   * while the limits allow. The counts are read afresh for every start: an attempt that ended
   * inside `start` has already given its slot back.
   */
  const pass = (now: number) => {
    // (keys first: a merchant served is moved to the end of the map)
    for (const merchantId of Array.from(waiting.keys())) {
      if (inFlightTotal >= settings.total) return
      const queue = waiting.get(merchantId)
      if (queue === undefined) continue
      let served = false
      while (queue.length > 0 && (inFlight.get(merchantId) ?? 0) < settings.perMerchant && inFlightTotal < settings.total) {
        const event = queue[0]!
        if (event.leaseEndsAt - now < settings.leaseNeededMs) {
          queue.shift()
          held.delete(event.id)
          givenBack.push(event)
          continue
        }
        // this tick's budget spent: the merchant keeps its turn if it got nothing
        if (!settings.mayStart()) {
          if (served) {
            waiting.delete(merchantId)
            waiting.set(merchantId, queue)
          }
          return
        }
        queue.shift()
        inFlight.set(merchantId, (inFlight.get(merchantId) ?? 0) + 1)
        inFlightTotal += 1
        served = true
        settings.start(event)
      }
      waiting.delete(merchantId)
      if (queue.length > 0) waiting.set(merchantId, queue)
    }
  }

  // Re-entrancy: an attempt that ends inside `start` reports its end, which asks for a dispatch
  // while `pass` is still iterating. Such a call only records that another pass is wanted; the
  // running call makes it once its pass is over. So no pass ever runs inside another one, and
  // none sees the waiting queues change under it.
  let dispatching = false
  let dispatchAgain = false
  /** Starts attempts of waiting events while the limits allow. */
  const dispatch = () => {
    if (dispatching) {
      dispatchAgain = true
      return
    }
    dispatching = true
    try {
      do {
        dispatchAgain = false
        pass(Date.now())
      } while (dispatchAgain)
    } finally {
      dispatching = false
    }
  }

  /** Claimed events, held from now until `leaseEndsAt`, wait for their attempts. */
  const add = (events: ReadonlyArray<ClaimedEvent>, leaseEndsAt: number) => {
    for (const event of events) {
      const entry: HeldEvent = { ...event, leaseEndsAt }
      held.set(event.id, entry)
      const queue = waiting.get(event.merchantId)
      if (queue === undefined) waiting.set(event.merchantId, [entry])
      else queue.push(entry)
    }
    if (events.length > 0) dispatch()
  }

  /** An attempt of the merchant's ended: its slot goes to the next waiting event. */
  const ended = (merchantId: string) => {
    const left = (inFlight.get(merchantId) ?? 1) - 1
    if (left > 0) inFlight.set(merchantId, left)
    else inFlight.delete(merchantId)
    inFlightTotal -= 1
    dispatch()
  }

  /**
   * What is held per merchant and in all that is not yet attempted or in flight: what the holding
   * limits count (an event whose attempt ended is done with, recorded or not).
   */
  const unfinished = () => {
    const perMerchant = new Map(inFlight)
    let total = inFlightTotal
    for (const [merchantId, queue] of waiting) {
      perMerchant.set(merchantId, (perMerchant.get(merchantId) ?? 0) + queue.length)
      total += queue.length
    }
    return { perMerchant, total }
  }

  return {
    add,
    ended,
    dispatch,
    unfinished,
    /** The event's result is recorded (or dropped): it is no longer held. */
    forget: (id: string) => held.delete(id),
    /** Events dropped unattempted because their leases were running out, to give back (taken once). */
    takeGivenBack: (): Array<HeldEvent> => givenBack.splice(0),
    /** Everything still held, to give back at shutdown. */
    heldEvents: (): Array<HeldEvent> => Array.from(held.values()),
    waitingOf: (merchantId: string) => waiting.get(merchantId)?.length ?? 0,
    inFlightOf: (merchantId: string) => inFlight.get(merchantId) ?? 0,
    inFlightByMerchant: (): ReadonlyMap<string, number> => inFlight,
    inFlightTotal: () => inFlightTotal
  } as const
}

export type AttemptQueue = ReturnType<typeof makeAttemptQueue>
