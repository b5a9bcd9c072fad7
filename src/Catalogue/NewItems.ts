/**
 * Writing listings none of which is stored (a reconciliation into an empty catalogue: a new
 * database's first) in bulk: COPY on PostgreSQL, several times cheaper for the server than the
 * change log's upserts, with the same rows in the items table and the log, gapless at the head
 * (decision 0026). A page is prepared ahead of its turn (`prepareNew`) and written (`writeNew`);
 * on PGlite by the upserts as one statement of arrays in binary, and on PostgreSQL, when one of
 * its items was stored meanwhile, by the upserts.
 */
import { Effect, Option } from "effect"
import { binaryStatement } from "../Db/BinaryStatement.js"
import { CopyBuffers, copyField, CopyRows } from "../Db/CopyIn.js"
import { serialise, type SimHints } from "../Domain/CatalogItem.js"
import type { SupplierListing } from "../Providers/Supplier.js"
import { ChangeLog, type Logged, normalised, runsOf, type Source } from "./ChangeLog.js"
import { type IndexedItem, indexedItem } from "./Entry.js"
import { NewItemsRepo } from "./NewItemsRepo.js"
import { storedItem } from "./Snapshots.js"

/** A page of listings made ready to be written (`NewItems.prepareNew`). */
export type NewPage =
  /** Without either of the below (an empty page, a test's database): the change log's upserts. */
  | { readonly _tag: "Upserts"; readonly source: Source; readonly listings: ReadonlyArray<SupplierListing> }
  /**
   * On PGlite (whose COPY reads a file, three times slower): the upserts as one statement of
   * arrays, its messages written ahead (BinaryStatement.ts), and what the index keeps of each item.
   */
  | {
    readonly _tag: "Arrays"
    readonly source: Source
    readonly messages: Uint8Array
    readonly indexed: ReadonlyArray<IndexedItem>
    readonly texts: ReadonlyArray<string>
  }
  /**
   * On PostgreSQL: the items' COPY rows, and per listing what its write needs besides. Pages wait
   * a few pages long for their write, past a young collection: a page kept its listings' items
   * (about 1.4 KB of objects each) into the old generation, where they were garbage.
   */
  | {
    readonly _tag: "Copy"
    readonly source: Source
    readonly items: Buffer
    /** The fields the index keeps (the engine's entry is made from them and the text). */
    readonly indexed: ReadonlyArray<IndexedItem>
    readonly texts: ReadonlyArray<string>
    readonly providerPrices: ReadonlyArray<number>
    readonly sims: ReadonlyArray<SimHints | undefined>
  }

type CopyPage = Extract<NewPage, { readonly _tag: "Copy" }>
type ArraysPage = Extract<NewPage, { readonly _tag: "Arrays" }>

/** A COPY page's listings again, for the upserts: each item from its text (as the engine reads one). */
const listingsOf = (page: CopyPage): ReadonlyArray<SupplierListing> =>
  page.texts.map((text, i) => ({ item: storedItem(text, page.indexed[i]!.id), providerPriceCents: page.providerPrices[i]!, sim: page.sims[i] }))

export class NewItems extends Effect.Service<NewItems>()("NewItems", {
  effect: Effect.gen(function*() {
    const changeLog = yield* ChangeLog
    const repo = yield* NewItemsRepo
    // a page's items' COPY block, for the pages prepared ahead and those being written (Sync.ts)
    const buffers = new CopyBuffers(8)

    /**
     * A page of listings none of which is stored (a reconciliation into an empty catalogue: a new
     * database's first), made ready for `writeNew` ahead of its turn: the texts and the items' COPY
     * rows (the log's rows need their seqs, known only once written). A reconciliation makes the
     * next pages while PostgreSQL writes this one.
     */
    const prepareNew = (listings: ReadonlyArray<SupplierListing>, source: Source = "supplier") =>
      Effect.sync((): NewPage => {
        const writes = runsOf(listings.map((listing) => normalised({ op: "upsert", listing }))).flatMap((run) => run.writes)
        const listed = writes.flatMap((write) => write.op === "upsert" ? [write.listing] : [])
        if (Option.isSome(repo.upsertArrays) && listed.length > 0) {
          const texts = listed.map(({ item }) => serialise(item))
          const messages = binaryStatement(changeLog.upsertArrays, [
            { type: "text[]", values: listed.map(({ item }) => item.id) },
            { type: "text[]", values: listed.map(({ item }) => item.market_hash_name) },
            { type: "int8[]", values: listed.map(({ item }) => Math.round(item.price * 100)) },
            { type: "int8[]", values: listed.map(({ providerPriceCents }) => providerPriceCents) },
            { type: "text[]", values: texts },
            { type: "text[]", values: listed.map(({ sim }) => sim === undefined ? null : JSON.stringify(sim)) },
            { type: "text", value: source }
          ])
          return { _tag: "Arrays", source, messages, indexed: listed.map(({ item }) => indexedItem(item)), texts }
        }
        // an empty page has nothing to copy (and would take a COPY buffer its write never gives back)
        if (Option.isNone(repo.copyNew) || listed.length === 0) {
          for (const { item } of listed) changeLog.textOf(item)
          return { _tag: "Upserts", source, listings: listed }
        }
        const items = new CopyRows()
        // made here, not kept by item (textOf): they go with the page
        const texts = listed.map(({ item }) => serialise(item))
        listed.forEach(({ item, providerPriceCents, sim }, i) => {
          const simText = sim === undefined ? null : JSON.stringify(sim)
          // the columns of NewItemsRepo's COPY, in its order
          items.add([item.id, item.market_hash_name, Math.round(item.price * 100), providerPriceCents, "active", copyField(texts[i]!), simText, source])
        })
        return {
          _tag: "Copy",
          source,
          items: items.bytes(buffers),
          indexed: listed.map(({ item }) => indexedItem(item)),
          texts,
          providerPrices: listed.map((listing) => listing.providerPriceCents),
          sims: listed.map((listing) => listing.sim)
        }
      })

    /**
     * Writes a prepared page of arrays (PGlite): the same upserts and log rows as the change log's,
     * in one transaction, and every engine woken at commit. Answers what it logged.
     */
    const writeArrays = Option.map(repo.upsertArrays, (upsertArrays) => (page: ArraysPage) =>
      repo.withTransaction(Effect.gen(function*() {
        const [first, epoch, ids] = yield* upsertArrays(page.messages)
        if (first === null || epoch === null || ids === null) return { count: 0, upserts: [] } satisfies Logged
        yield* repo.notifyHead
        const at = new Map(page.indexed.map((item, i) => [item.id, i]))
        const logged = ids.split(",")
        return {
          count: logged.length,
          upserts: logged.flatMap((id, k) => {
            const i = at.get(id)
            return i === undefined ? [] : [{ seq: first + k, epoch, item: page.indexed[i]!, text: page.texts[i]! }]
          })
        } satisfies Logged
      })).pipe(Effect.withSpan("NewItems.writeArrays")))

    /**
     * Writes a prepared page: on PGlite its arrays (`writeArrays`); on PostgreSQL with COPY, several
     * times cheaper for the server than the upserts: the items and their log rows at the head, in
     * one transaction, and every engine woken at commit. When one of them was stored meanwhile (the
     * COPY fails and is rolled back), they are the change log's upserts (`ChangeLog.applyLogged`).
     * Answers what it logged.
     */
    const writeNew = (page: NewPage) => {
      const upserts = (listings: ReadonlyArray<SupplierListing>) => changeLog.applyLogged(listings.map((listing) => ({ op: "upsert", listing })), page.source)
      if (page._tag === "Upserts") return upserts(page.listings)
      if (page._tag === "Arrays") {
        // an Arrays page is made only with PgliteProtocol, by this service
        return Option.isSome(writeArrays) ? writeArrays.value(page) : Effect.dieMessage("NewItems: an Arrays page without PgliteProtocol")
      }
      const { indexed, texts } = page
      // a COPY page is made only with the direct transactions: this gives the function the transaction
      if (Option.isNone(repo.copyNew)) return upserts(listingsOf(page))
      // the page's COPY buffer is given back once the COPY has ended
      return repo.copyNew.value(page.items, indexed.map((item) => item.id), () => buffers.give(page.items)).pipe(
        Effect.flatMap((head) => {
          if (head === undefined) return upserts(listingsOf(page))
          const first = head.head - indexed.length + 1
          return Effect.succeed<Logged>({
            count: indexed.length,
            upserts: indexed.map((item, i) => ({ seq: first + i, epoch: head.epoch, item, text: texts[i]! }))
          })
        }),
        Effect.withSpan("NewItems.writeNew")
      )
    }

    return { prepareNew, writeNew } as const
  }),
  dependencies: [NewItemsRepo.Default, ChangeLog.Default]
}) {}
