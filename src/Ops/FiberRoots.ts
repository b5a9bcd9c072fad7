/**
 * Effect's registry of root fibers (every `Runtime.runPromise`, `runFork` and daemon fiber) kept in
 * an array instead of a Set.
 *
 * Effect adds each root fiber to one process-wide Set and deletes it when the fiber ends: a Set
 * that lives as long as the process and changes twice per request. V8 rehashes such a Set every
 * few changes and links the table it discards to the new one, with the entries it held (for
 * iterators still on it). Once those tables are in the old generation they are garbage that only a
 * full collection frees, and until then they keep the fibers they held, and everything those
 * reach (a request's whole state), alive through every young-generation collection: such objects
 * are copied twice and promoted. A minimal server running one suspended Effect per request (a
 * database read, or a sleep) promoted 2.3 to 2.9 MB per young collection with 9 to 12 ms pauses,
 * and 0.6 to 0.7 MB with 4 to 5 ms pauses with this array (decision 0027). Slots are reused, so the
 * array's storage is not replaced as fibers come and go.
 *
 * The Set is Effect's internal state (the pinned version's `FiberScope` global scope): it is
 * replaced only if it is where that version keeps it, and `Fiber.roots` still lists the roots.
 */
import { GlobalValue, Predicate } from "effect"

/** The operations Effect uses on its roots: add, delete, and iteration (`Fiber.roots`). */
class FiberRootArray<A> {
  private readonly items: Array<A> = []

  constructor(from: Iterable<A>) {
    for (const item of from) this.items.push(item)
  }

  add(item: A): this {
    this.items.push(item)
    return this
  }

  /** Short-lived fibers were added last: the search starts from the end. */
  delete(item: A): boolean {
    const at = this.items.lastIndexOf(item)
    if (at < 0) return false
    const last = this.items.pop()!
    if (at < this.items.length) this.items[at] = last
    return true
  }

  get size(): number {
    return this.items.length
  }

  [Symbol.iterator](): IterableIterator<A> {
    return this.items.slice()[Symbol.iterator]()
  }
}

const GLOBAL_SCOPE = Symbol.for("effect/FiberScope/Global")

/**
 * Replaces the Set of Effect's root fibers with an array (once; later calls do nothing). False if
 * this version of Effect keeps its roots elsewhere (nothing is changed then).
 */
export const keepFiberRootsInArray = (): boolean => {
  const scope: unknown = GlobalValue.globalValue(GLOBAL_SCOPE, () => undefined)
  if (!Predicate.hasProperty(scope, "roots")) return false
  if (scope.roots instanceof FiberRootArray) return true
  if (!(scope.roots instanceof Set)) return false
  Object.defineProperty(scope, "roots", { value: new FiberRootArray(scope.roots), writable: false })
  return true
}
