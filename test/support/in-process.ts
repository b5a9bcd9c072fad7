/** What the services tested in process (it.layer) share: their outside world, a recipient, a live item. */
import { Effect, Layer, Schema } from "effect"
import { ChangeLog } from "../../src/Catalogue/ChangeLog.js"
import { Settings } from "../../src/Config.js"
import { CatalogItemInput } from "../../src/Domain/CatalogItem.js"
import { DatabaseTest } from "./database-layer.js"

/**
 * A service (or feature) layer with its outside world for a test: the settings' defaults but
 * `overrides` (Settings.Test) and a fresh test database. Its neighbours come with it through its
 * `dependencies`; a test replaces a provider by providing its own stand-in first.
 */
export const inProcess = <A, E, R>(layer: Layer.Layer<A, E, R>, overrides: Readonly<Record<string, string>> = {}) =>
  layer.pipe(Layer.provideMerge(Settings.Test(overrides)), Layer.provideMerge(DatabaseTest))

export const RECIPIENT = {
  tradeUrl: "https://steamcommunity.com/tradeoffer/new/?partner=12345678&token=abcdEFGH",
  steamId: "76561198012345678"
}

/** A live catalogue item at `price` USD, written through the change log as the supplier's sync writes it; its id. */
export const liveItem = (price: number) =>
  Effect.gen(function*() {
    const changeLog = yield* ChangeLog
    const { sim: _sim, has_stickers: _h, stickers_count: _c, ...item } = Schema.decodeUnknownSync(CatalogItemInput)({
      market_hash_name: `AK-47 | Redline (Field-Tested) ${crypto.randomUUID()}`,
      price,
      delivery_type: "instant"
    })
    const id = crypto.randomUUID()
    yield* changeLog.apply([{
      op: "upsert",
      listing: { item: { ...item, id, has_stickers: false, stickers_count: 0 }, providerPriceCents: Math.floor(price * 100 / 1.07), sim: undefined }
    }], "admin")
    return id
  }).pipe(Effect.orDie)
