/**
 * Bounded waiting for the black-box tests and the chaos command: a pause, and polling until a
 * condition holds with a generous deadline that is never asserted on. No test runner here.
 */

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Retries `check` until it returns a value other than undefined; the deadline is generous, never asserted on. */
export const pollUntil = async <A>(what: string, check: () => Promise<A | undefined>, timeoutMs = 60_000, pauseMs = 50): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(pauseMs)
  }
}

/**
 * Retries `attempt` until it stops throwing (the catalogue applies admin writes asynchronously,
 * through the change log). Bounded: the last failure is rethrown after `timeoutMs`.
 */
export const eventually = async <A>(attempt: () => Promise<A> | A, timeoutMs = 30_000, pauseMs = 50): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await attempt()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((r) => setTimeout(r, pauseMs))
    }
  }
}
