/**
 * Concurrent calls gathered into batches, each run as one unit of work (for the fast lane's buys:
 * one transaction, one commit for several buys, as a database's group commit does). A call waits
 * only while `maxInFlight` batches are running: the calls that arrive meanwhile form the next
 * batch, so a lone call is never delayed and a busy one is batched by itself. Calls that may not
 * share a batch (`compatible` says no) wait for a later one, in their order.
 */

export interface BatchOptions<I> {
  /** Batches running at once. */
  readonly maxInFlight: number
  /** Calls in one batch at most. */
  readonly maxBatch: number
  /** Whether `input` may join a batch already holding `batch` (a call always starts an empty one). */
  readonly compatible: (batch: ReadonlyArray<I>, input: I) => boolean
}

interface Waiting<I, O> {
  readonly input: I
  readonly resolve: (output: O) => void
  readonly reject: (error: unknown) => void
}

/**
 * A function of one input that runs in a batch: `run` gets the batch's inputs and returns their
 * outputs in the same order; when it throws, every call of the batch rejects with its error.
 */
export const batches = <I, O>(
  run: (inputs: ReadonlyArray<I>) => Promise<ReadonlyArray<O>>,
  options: BatchOptions<I>
): (input: I) => Promise<O> => {
  let waiting: Array<Waiting<I, O>> = []
  let inFlight = 0
  let scheduled = false

  const takeBatch = () => {
    const batch: Array<Waiting<I, O>> = []
    const inputs: Array<I> = []
    const rest: Array<Waiting<I, O>> = []
    for (const call of waiting) {
      if (batch.length === 0 || (batch.length < options.maxBatch && options.compatible(inputs, call.input))) {
        batch.push(call)
        inputs.push(call.input)
      } else {
        rest.push(call)
      }
    }
    waiting = rest
    return batch
  }

  const start = (batch: ReadonlyArray<Waiting<I, O>>) => {
    inFlight++
    const settled = (settle: () => void) => {
      inFlight--
      settle()
      drain()
    }
    // a `run` that throws at once rejects its batch like one whose promise rejects
    new Promise<ReadonlyArray<O>>((resolve) => resolve(run(batch.map((call) => call.input)))).then(
      (outputs) => settled(() => batch.forEach((call, i) => call.resolve(outputs[i]!))),
      (error) => settled(() => batch.forEach((call) => call.reject(error)))
    )
  }

  const drain = () => {
    scheduled = false
    while (inFlight < options.maxInFlight && waiting.length > 0) start(takeBatch())
  }

  return (input) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject })
      // the calls of the requests read in this turn of the event loop start together
      if (!scheduled && inFlight < options.maxInFlight) {
        scheduled = true
        setImmediate(drain)
      }
    })
}
