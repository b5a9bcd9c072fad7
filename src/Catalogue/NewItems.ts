/**
 * Writing listings none of which is stored (a reconciliation into an empty catalogue: a new
 * database's first) in bulk: COPY on PostgreSQL, several times cheaper for the server than the
 * change log's upserts, with the same rows in the items table and the log, gapless at the head
 * (decision 0026). A page is prepared ahead of its turn (`prepareNew`) and written (`writeNew`);
 * on PGlite, or when one of its items was stored meanwhile, it is written by the upserts.
 */
import { Effect, Option, Schema } from "effect"
import { type CopyField, copyField, CopyRows } from "../Db/CopyIn.js"
import { DirectTransactions } from "../Db/Database.js"
import { serialise } from "../Domain/CatalogItem.js"
import { Int8 } from "../Domain/Db.js"
import type { SupplierListing } from "../Providers/Supplier.js"
import { ChangeLog, CHANGES_CHANNEL, type Logged, normalised, runsOf, type Source } from "./ChangeLog.js"

/** A page of new listings made ready to be written by COPY (`NewItems.prepareNew`). */
export interface NewPage {
  readonly listings: ReadonlyArray<SupplierListing>
  readonly source: Source
  /** The items' rows, each listing's text, and the same as COPY has it; none on PGlite (no COPY). */
  readonly copy: { readonly items: Buffer; readonly texts: ReadonlyArray<string>; readonly fields: ReadonlyArray<CopyField> } | undefined
}

const decodeHead = Schema.decodeUnknownSync(Schema.Struct({ epoch: Schema.Number, head: Int8 }))

const COPY_ITEMS = "COPY catalogue_items (id, market_hash_name, price_cents, provider_price_cents, status, item, sim, source) FROM STDIN"
const COPY_CHANGES = "COPY catalogue_changes (seq, epoch, op, item_id, item) FROM STDIN"

export class NewItems extends Effect.Service<NewItems>()("NewItems", {
  effect: Effect.gen(function*() {
    const changeLog = yield* ChangeLog
    const direct = Option.flatten(yield* Effect.serviceOption(DirectTransactions))

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
        if (Option.isNone(direct)) {
          for (const { item } of listed) changeLog.textOf(item)
          return { listings: listed, source, copy: undefined }
        }
        const items = new CopyRows()
        // made here, not kept by item (textOf): they go with the page
        const texts = listed.map(({ item }) => serialise(item))
        const fields = listed.map(({ item, providerPriceCents, sim }, i) => {
          // escaped and encoded once, written in both tables
          const field = copyField(texts[i]!)
          const simText = sim === undefined ? null : JSON.stringify(sim)
          items.add([item.id, item.market_hash_name, Math.round(item.price * 100), providerPriceCents, "active", field, simText, source])
          return field
        })
        return { listings: listed, source, copy: { items: items.bytes(), fields, texts } }
      })

    /**
     * Writes a prepared page with COPY, several times cheaper for PostgreSQL than the upserts: the
     * items and their log rows at the head, in one transaction, and every engine woken at commit.
     * On PGlite, or when one of them was stored meanwhile (the COPY fails and is rolled back), they
     * are the change log's upserts (`ChangeLog.applyLogged`). Answers what it logged.
     */
    const writeNew = (page: NewPage) => {
      const { copy, listings, source } = page
      const upserts = () => changeLog.applyLogged(listings.map((listing) => ({ op: "upsert", listing })), source)
      if (Option.isNone(direct) || copy === undefined || listings.length === 0) return upserts()
      const transaction = direct.value
      return Effect.promise(() =>
        transaction(async (session) => {
          // the items before the head's row lock: another page's write copies its items meanwhile
          if ((await session.copy(COPY_ITEMS, copy.items)) === undefined) return undefined
          const bumped = await session.queries([["UPDATE catalogue_state SET head_seq = head_seq + $1 RETURNING epoch, head_seq AS head", [listings.length]]])
          if (bumped === undefined) return undefined
          const { epoch, head } = decodeHead(bumped[0]?.[0])
          const first = head - listings.length + 1
          const changes = new CopyRows()
          listings.forEach(({ item }, i) => changes.add([first + i, epoch, "upsert", item.id, copy.fields[i]!]))
          if ((await session.copy(COPY_CHANGES, changes.bytes())) === undefined) return undefined
          const committed = await session.queriesAndCommit([["SELECT pg_notify($1, $2)", [CHANGES_CHANNEL, String(head)]]])
          if (committed === undefined) return undefined
          return { count: listings.length, upserts: listings.map(({ item }, i) => ({ seq: first + i, epoch, item, text: copy.texts[i]! })) }
        })
      ).pipe(
        Effect.flatMap((logged) => logged === undefined ? upserts() : Effect.succeed<Logged>(logged)),
        Effect.withSpan("NewItems.writeNew")
      )
    }

    return { prepareNew, writeNew } as const
  })
}) {}
