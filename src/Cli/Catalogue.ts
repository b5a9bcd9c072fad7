/** `catalogue load FILE`: upserts items through the supplier-sync path. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Schema } from "effect"
import { CatalogueItems, ItemsUpserted } from "../Ops/AdminApi.js"
import { call, checked, CliFailure, connection, connectionOptions, report } from "./Admin.js"

/** A catalogue file: an array of items, or an object with them under `items` (as the admin API takes them). */
const decodeItemsFile = Schema.decodeUnknown(Schema.Union(Schema.Array(Schema.Unknown), Schema.Struct({ items: Schema.Array(Schema.Unknown) })))

const catalogueLoad = Command.make("load", {
  ...connectionOptions,
  file: Args.file({ name: "FILE", exists: "yes" }).pipe(
    Args.withDescription("a JSON file holding an array of CatalogItem-shaped objects (or {\"items\": [...]})")
  )
}, (flags) =>
  Effect.gen(function*() {
    const conn = yield* connection(flags)
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(flags.file).pipe(
      Effect.mapError((e) => new CliFailure({ message: `cannot read ${flags.file}: ${e.message}` }))
    )
    const parsed = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (e) => new CliFailure({ message: `${flags.file} is not JSON: ${e instanceof Error ? e.message : String(e)}` })
    })
    const items = yield* decodeItemsFile(parsed).pipe(
      Effect.mapError(() => new CliFailure({ message: `${flags.file} must hold a JSON array of catalogue items` }))
    )
    const payload = yield* checked(CatalogueItems, { items: "items" in items ? items.items : items })
    const answer = yield* call(conn, (client) => client.catalogue.upsertItems({ payload }))
    yield* report(conn, answer, ItemsUpserted, (body) => `upserted ${body.upserted} catalogue item${body.upserted === 1 ? "" : "s"} from ${flags.file}`)
  })).pipe(Command.withDescription("upsert catalogue items through the supplier-sync path"))

export const catalogue = Command.make("catalogue").pipe(
  Command.withDescription("the catalogue"),
  Command.withSubcommands([catalogueLoad])
)
