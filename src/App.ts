/**
 * The whole service as one layer, given its Settings and the database: what main.ts runs. Each
 * feature brings its own services and background work (its folder's Layer.ts; a service's
 * neighbours come with it through its `dependencies`, built once however many ask for them).
 */
import { Layer } from "effect"
import { CabinetLive } from "./Cabinet/Layer.js"
import { FeedShutdownLive } from "./Catalogue/FeedClients.js"
import { CatalogueLive } from "./Catalogue/Layer.js"
import { DepositsLive } from "./Deposits/Layer.js"
import { HttpLive } from "./Http.js"
import { LedgerLive } from "./Ledger/Layer.js"
import { StartupBannerLive } from "./Merchants/Demo.js"
import { MerchantsLive } from "./Merchants/Layer.js"
import { OpsLive } from "./Ops/Layer.js"
import { OpsServerLive } from "./Ops/Server.js"
import { SimulatorLive } from "./Providers/Simulator/Layer.js"
import { PurchasesLive } from "./Purchases/Layer.js"
import { WebhooksLive } from "./Webhooks/Layer.js"

/** The features over the providers they are given (simulated ones: Providers/Simulator, which the admin API drives too). */
const Features = Layer.mergeAll(
  OpsLive,
  MerchantsLive,
  CabinetLive,
  LedgerLive,
  WebhooksLive,
  DepositsLive,
  CatalogueLive,
  PurchasesLive
).pipe(Layer.provideMerge(SimulatorLive))

/**
 * What works behind the merchant API is provided to it, so that it is built before it and released
 * after it: on SIGTERM the API drains first (requests under way answered, up to
 * SHUTDOWN_GRACE_SECONDS) while the purchase worker still steps what they bought, the webhook
 * sender still delivers and the ops listener still answers (/ready 503: Http.ts). The ops
 * listener serves the admin API over every feature.
 */
export const AppLive = Layer.mergeAll(Layer.provide(FeedShutdownLive, HttpLive), StartupBannerLive).pipe(
  Layer.provide(OpsServerLive),
  Layer.provide(Features)
)
