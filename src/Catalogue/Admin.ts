/**
 * The catalogue on the admin API (CONTRACT 2): items upserted or delisted through the supplier-sync
 * path (the change log), so that lists, the feed and the dump all see them.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { toUnits } from "../Domain/Money.js"
import { AdminApi } from "../Ops/AdminApi.js"
import { notFound, storable } from "../Ops/AdminHttp.js"
import { ChangeLog } from "./ChangeLog.js"
import { CatalogueEngine } from "./Engine.js"

export const AdminCatalogueHttp = HttpApiBuilder.group(AdminApi, "catalogue", (handlers) =>
  Effect.gen(function*() {
    const changeLog = yield* ChangeLog
    const engine = yield* CatalogueEngine
    return handlers
      .handle("upsertItems", ({ payload }) =>
        Effect.gen(function*() {
          const input = yield* storable(payload)
          const writes = input.items.map(({ sim, id, has_stickers, stickers_count, ...item }) => ({
            op: "upsert" as const,
            listing: {
              item: {
                ...item,
                id: (id ?? randomUUID()).toLowerCase(),
                has_stickers: has_stickers ?? item.stickers.length > 0,
                stickers_count: stickers_count ?? item.stickers.length
              },
              providerPriceCents: Math.floor(Number(toUnits(item.price, 2)) * 100 / 107),
              sim
            }
          }))
          yield* changeLog.apply(writes, "admin").pipe(Effect.orDie)
          // this node answers reads of what it just wrote
          yield* engine.refresh.pipe(Effect.orDie)
          return { upserted: writes.length, ids: writes.map((w) => w.listing.item.id) }
        }))
      .handle("removeItem", ({ path }) =>
        Effect.gen(function*() {
          if (!Schema.is(Schema.UUID)(path.id)) return yield* notFound("item")
          const removed = yield* changeLog.apply([{ op: "remove", id: path.id }], "admin").pipe(Effect.orDie)
          if (removed === 0) return yield* notFound("active item")
          yield* engine.refresh.pipe(Effect.orDie)
        }))
  }))
