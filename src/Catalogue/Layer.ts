/**
 * The catalogue feature as one layer: the change log and its reservations, the in-memory engine
 * (search, filters, the feed's events), the dump, the feed's clients and the supplier's sync that
 * fills it all. Needs the database, the settings and a supplier.
 */
import { Layer } from "effect"
import { Fibers } from "../Ops/Fibers.js"
import { Readiness } from "../Ops/Readiness.js"
import { ChangeLog } from "./ChangeLog.js"
import { CatalogueDump } from "./Dump.js"
import { CatalogueEngine } from "./Engine.js"
import { FeedClients } from "./FeedClients.js"
import { NewItems } from "./NewItems.js"
import { CatalogueRepo } from "./Repo.js"
import { CatalogueReservations } from "./Reservations.js"
import { SyncLive } from "./Sync.js"

const Sync = SyncLive.pipe(
  Layer.provide([CatalogueRepo.Default, Fibers.Default, ChangeLog.Default, NewItems.Default, Readiness.Default, CatalogueEngine.Default])
)

export const CatalogueLive = Layer.mergeAll(
  ChangeLog.Default,
  CatalogueReservations.Default,
  CatalogueEngine.Default,
  CatalogueDump.Default,
  NewItems.Default,
  FeedClients.Default,
  Sync
)
