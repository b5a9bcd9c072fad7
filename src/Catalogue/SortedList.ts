/**
 * A sorted list of entries by (price, id), kept in chunks so that inserting or removing one entry
 * moves at most a chunk, and seeking a position is two binary searches.
 */
export interface Keyed {
  readonly price: number
  readonly id: string
}

const CHUNK = 512

export const compareKeys = (a: Keyed, b: Keyed): number => a.price !== b.price ? a.price - b.price : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

export class SortedList<E extends Keyed> {
  private chunks: Array<Array<E>> = []
  private count = 0

  get size(): number {
    return this.count
  }

  /** A list of entries already sorted by (price, id), chunked without any search. */
  static fromSorted<E extends Keyed>(sorted: ReadonlyArray<E>): SortedList<E> {
    const list = new SortedList<E>()
    for (let i = 0; i < sorted.length; i += CHUNK) list.chunks.push(sorted.slice(i, i + CHUNK))
    list.count = sorted.length
    return list
  }

  /** Index of the first chunk whose last entry is >= key (or the last chunk). */
  private chunkFor(key: Keyed): number {
    let lo = 0
    let hi = this.chunks.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      const chunk = this.chunks[mid]!
      if (compareKeys(chunk[chunk.length - 1]!, key) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** First index in `chunk` whose entry is >= key. */
  private static lowerBound<E extends Keyed>(chunk: ReadonlyArray<E>, key: Keyed): number {
    let lo = 0
    let hi = chunk.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (compareKeys(chunk[mid]!, key) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  insert(entry: E): void {
    this.count++
    if (this.chunks.length === 0) {
      this.chunks.push([entry])
      return
    }
    const c = this.chunkFor(entry)
    const chunk = this.chunks[c]!
    chunk.splice(SortedList.lowerBound(chunk, entry), 0, entry)
    if (chunk.length > 2 * CHUNK) this.chunks.splice(c + 1, 0, chunk.splice(CHUNK))
  }

  /** Removes the entry with the same key; false if absent. */
  remove(key: Keyed): boolean {
    if (this.chunks.length === 0) return false
    const c = this.chunkFor(key)
    const chunk = this.chunks[c]!
    const i = SortedList.lowerBound(chunk, key)
    if (i >= chunk.length || compareKeys(chunk[i]!, key) !== 0) return false
    chunk.splice(i, 1)
    this.count--
    if (chunk.length === 0) this.chunks.splice(c, 1)
    return true
  }

  /**
   * Puts `entry` in the place of the entry with `old`'s key (a changed price moves it); false if
   * that key is absent. When the entry stays within its chunk (most price changes do), it is moved
   * there in one shift: one search, no splice.
   */
  replace(old: Keyed, entry: E): boolean {
    if (this.chunks.length === 0) return false
    const c = this.chunkFor(old)
    const chunk = this.chunks[c]!
    const i = SortedList.lowerBound(chunk, old)
    if (i >= chunk.length || compareKeys(chunk[i]!, old) !== 0) return false
    const previous = this.chunks[c - 1]
    const next = this.chunks[c + 1]
    const staysInChunk = (previous === undefined || compareKeys(previous[previous.length - 1]!, entry) < 0) &&
      (next === undefined || compareKeys(entry, next[0]!) < 0)
    if (!staysInChunk) {
      chunk.splice(i, 1)
      this.count--
      if (chunk.length === 0) this.chunks.splice(c, 1)
      this.insert(entry)
      return true
    }
    // the entries between the old place and the new one shift by one toward the old place
    const to = SortedList.lowerBound(chunk, entry)
    if (to > i) {
      for (let k = i; k < to - 1; k++) chunk[k] = chunk[k + 1]!
      chunk[to - 1] = entry
    } else {
      for (let k = i; k > to; k--) chunk[k] = chunk[k - 1]!
      chunk[to] = entry
    }
    return true
  }

  /**
   * Visits entries in ascending order, starting at the first entry > `from` (or >= `from` if
   * inclusive), until `visit` returns false. A plain loop: a page walk is on every list request.
   */
  visitAscending(from: Keyed | undefined, inclusive: boolean, visit: (entry: E) => boolean): void {
    if (this.chunks.length === 0) return
    let c = from === undefined ? 0 : this.chunkFor(from)
    let i = from === undefined ? 0 : SortedList.lowerBound(this.chunks[c]!, from)
    if (from !== undefined && !inclusive) {
      const chunk = this.chunks[c]!
      if (i < chunk.length && compareKeys(chunk[i]!, from) === 0) i++
    }
    for (; c < this.chunks.length; c++, i = 0) {
      const chunk = this.chunks[c]!
      for (; i < chunk.length; i++) if (!visit(chunk[i]!)) return
    }
  }

  /** Visits entries in descending order, from the last entry < `before` (or <= if inclusive), until `visit` returns false. */
  visitDescending(before: Keyed | undefined, inclusive: boolean, visit: (entry: E) => boolean): void {
    if (this.chunks.length === 0) return
    let c: number
    let i: number
    if (before === undefined) {
      c = this.chunks.length - 1
      i = this.chunks[c]!.length - 1
    } else {
      c = this.chunkFor(before)
      const chunk = this.chunks[c]!
      const lb = SortedList.lowerBound(chunk, before)
      i = inclusive && lb < chunk.length && compareKeys(chunk[lb]!, before) === 0 ? lb : lb - 1
      if (lb >= chunk.length && compareKeys(chunk[chunk.length - 1]!, before) < 0) i = chunk.length - 1
    }
    for (; c >= 0; c--) {
      const chunk = this.chunks[c]!
      if (i === Number.POSITIVE_INFINITY) i = chunk.length - 1
      for (; i >= 0; i--) if (!visit(chunk[i]!)) return
      i = Number.POSITIVE_INFINITY
    }
  }

  /** Entries in ascending order, starting at the first entry > `from` (or >= `from` if inclusive). */
  ascending(from?: Keyed, inclusive = false): Array<E> {
    const out: Array<E> = []
    this.visitAscending(from, inclusive, (entry) => out.push(entry) > 0)
    return out
  }

  /** Entries in descending order, starting at the last entry < `before` (or <= if inclusive). */
  descending(before?: Keyed, inclusive = false): Array<E> {
    const out: Array<E> = []
    this.visitDescending(before, inclusive, (entry) => out.push(entry) > 0)
    return out
  }

  /** Every entry, ascending. */
  [Symbol.iterator](): Iterator<E> {
    return this.ascending()[Symbol.iterator]()
  }
}
