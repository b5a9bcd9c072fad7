/**
 * The buy engine's batch on PostgreSQL (BuyEngine.ts): several buys by id in one transaction
 * straight on a pool client (Db/Database.ts `DirectTransaction`), in two round trips: BEGIN, the
 * idempotency records and the items' locks sent at once, then the buy statements with the COMMIT,
 * so balance rows are held inside PostgreSQL only, never across a round trip. Each buy acts as if
 * the batch's buys had run one after the other. One that cannot buy here (a repeated custom_id, a
 * refusal, too little balance) leaves nothing behind and is not in the result: the engine runs it
 * alone through SqlClient, which answers it by the one idempotency rule, having seen nothing
 * change.
 */
import { Either } from "effect"
import type { DirectSession } from "../Db/Database.js"
import {
  type Bought,
  boughtOf,
  type BuyByIdRequest,
  type BuyStatements,
  compareText,
  decodeLockedItems,
  itemRefusal,
  type LockedItem
} from "./BuyStatements.js"

/** The buys the batch's transaction committed, by their inputs; undefined when it committed none. */
export const pipelinedBatch = async (
  statements: BuyStatements,
  { queries, queriesAndCommit }: DirectSession,
  inputs: ReadonlyArray<BuyByIdRequest>
): Promise<ReadonlyMap<BuyByIdRequest, Bought> | undefined> => {
  // every batch takes its locks in one order (idempotency records, items, balance rows), so two never deadlock
  const requests = [...inputs].sort((a, b) => compareText(a.merchantId, b.merchantId) || compareText(a.customId, b.customId))
  const first = await queries([
    ...requests.map((input) => statements.insertRequest(input).compile()),
    statements.lockItems(requests.map((r) => r.itemId)).compile()
  ])
  const lockedRows = first === undefined ? undefined : Either.getOrUndefined(decodeLockedItems(first[requests.length]))
  if (first === undefined || lockedRows === undefined) return undefined
  const locked = new Map(lockedRows.map((row) => [row.id, row]))
  const toBuy: Array<{ readonly input: BuyByIdRequest; readonly row: LockedItem }> = []
  const toUndo: Array<BuyByIdRequest> = []
  requests.forEach((input, i) => {
    if (first[i]!.length === 0) return // the custom_id is taken: a repeat, or a concurrent duplicate
    const row = locked.get(input.itemId)
    if (row === undefined || itemRefusal(row, input) !== undefined) toUndo.push(input)
    else toBuy.push({ input, row })
  })
  if (toBuy.length === 0) return undefined
  toBuy.sort((a, b) => compareText(a.input.merchantId, b.input.merchantId))
  const rows = await queriesAndCommit([
    ...toUndo.map((input) => statements.deleteRequest(input).compile()),
    ...toBuy.map(({ input, row }) => statements.buyStatement({ ...input, attempt: 1 }, row, true).compile())
  ])
  if (rows === undefined) return undefined
  // committed: each buy's rows are its purchase, or none if it bought nothing (a decoding failure would be a defect)
  const bought = new Map<BuyByIdRequest, Bought>()
  toBuy.forEach(({ input, row }, i) => {
    const purchaseRows = rows[toUndo.length + i]!
    if (purchaseRows.length > 0) bought.set(input, Either.getOrThrow(boughtOf(purchaseRows, row)))
  })
  return bought
}
