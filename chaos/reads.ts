/**
 * Reads of the merchant API for the chaos run's checks: every page of a list, the whole catalogue,
 * and waiting (with a generous deadline, never asserted on) until background work has settled.
 */
import { sleep } from "../test/support/polling.js"
import type { RunningServer } from "../test/support/server.js"

/** Every entry of a cursor-paginated list (`field` of each page), following next_cursor. */
export const allPages = async <A>(node: RunningServer, key: string, path: string, field: string): Promise<Array<A>> => {
  const all: Array<A> = []
  let cursor: string | null = null
  for (let page = 0; page < 10_000; page++) {
    const separator = path.includes("?") ? "&" : "?"
    const res = await node.api(`${path}${separator}limit=200${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key })
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text.slice(0, 300)}`)
    const body = res.json as Record<string, unknown>
    all.push(...body[field] as Array<A>)
    cursor = body["next_cursor"] as string | null
    if (cursor === null) return all
  }
  throw new Error(`GET ${path}: the pages did not end`)
}

/** The catalogue as GET /items lists it (every page), by id. */
export const walkCatalogue = async (node: RunningServer, key: string): Promise<Map<string, unknown>> =>
  new Map((await allPages<{ id: string }>(node, key, "/items", "items")).map((item) => [item.id, item]))

/**
 * Calls `attempt` every half second until it says it is done, or `timeoutMs` has passed: then its
 * last value is given back with `timedOut` (a check reports what it saw then).
 */
export const settle = async <A>(attempt: () => Promise<{ done: boolean; value: A }>, timeoutMs: number): Promise<{ value: A; timedOut: boolean }> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { done, value } = await attempt()
    if (done) return { value, timedOut: false }
    if (Date.now() > deadline) return { value, timedOut: true }
    await sleep(500)
  }
}

/** An item with its null fields left out and its keys sorted: the dump may leave out what the list gives as null. */
export const normalItem = (item: unknown): string =>
  JSON.stringify(item, (_key, value) => {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return value
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== null).sort(([a], [b]) => a.localeCompare(b)))
  })

/** How two catalogues differ (by id): items only in one, and items that differ. */
export const catalogueDifference = (got: ReadonlyMap<string, unknown>, want: ReadonlyMap<string, unknown>): Array<string> => {
  const problems: Array<string> = []
  for (const [id, item] of want) {
    if (!got.has(id)) problems.push(`missing item ${id}`)
    else if (normalItem(got.get(id)) !== normalItem(item)) {
      problems.push(`item ${id} differs: ${normalItem(got.get(id)).slice(0, 300)} against ${normalItem(item).slice(0, 300)}`)
    }
  }
  for (const id of got.keys()) if (!want.has(id)) problems.push(`extra item ${id}`)
  return problems
}
