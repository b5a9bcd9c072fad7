/** The whole service as one layer, given its Settings and the database: what main.ts runs. */
import { Layer } from "effect"
import { CabinetAccounts } from "./Cabinet/Accounts.js"
import { ChangeLog } from "./Catalogue/ChangeLog.js"
import { CatalogueDump } from "./Catalogue/Dump.js"
import { CatalogueEngine } from "./Catalogue/Engine.js"
import { NewItems } from "./Catalogue/NewItems.js"
import { CatalogueReservations } from "./Catalogue/Reservations.js"
import { FeedClients, FeedShutdownLive } from "./Catalogue/Stream.js"
import { SyncLive } from "./Catalogue/Sync.js"
import { Deposits } from "./Deposits/Deposits.js"
import { WalletPayments } from "./Deposits/WalletPayments.js"
import { WalletRequests } from "./Deposits/WalletRequests.js"
import { Wallets } from "./Deposits/Wallets.js"
import { HttpLive } from "./Http.js"
import { Ledger } from "./Ledger/Ledger.js"
import { Authenticator } from "./Merchants/Authentication.js"
import { StartupBannerLive } from "./Merchants/Demo.js"
import { Merchants } from "./Merchants/Merchants.js"
import { AdminToken } from "./Ops/AdminToken.js"
import { Fibers } from "./Ops/Fibers.js"
import { Metrics } from "./Ops/Metrics.js"
import { Readiness } from "./Ops/Readiness.js"
import { OpsServerLive } from "./Ops/Server.js"
import { ProviderSimLive } from "./Providers/Simulator/ProviderSim.js"
import { SupplierSimLive } from "./Providers/Simulator/SupplierSim.js"
import { WalletProviderSimLive } from "./Providers/Simulator/WalletProviderSim.js"
import { BuyByName } from "./Purchases/BuyByName.js"
import { BuyEngine } from "./Purchases/BuyEngine.js"
import { PurchaseHandover } from "./Purchases/Handover.js"
import { PurchaseNotifications } from "./Purchases/Notifications.js"
import { Purchases } from "./Purchases/Purchases.js"
import { PurchaseWorkerLive } from "./Purchases/Worker.js"
import { WebhookDeliveries } from "./Webhooks/Deliveries.js"
import { WebhookEvents } from "./Webhooks/Events.js"
import { Outbox } from "./Webhooks/Outbox.js"
import { WebhookSenderLive } from "./Webhooks/Sender.js"

/** What every feature may use: the fiber registry, metrics, readiness, the admin token. */
const Base = Layer.mergeAll(Fibers.Default, Metrics.Default, Readiness.Default, AdminToken.Default)

/** Services the features stand on. */
const Core = Layer.mergeAll(
  Merchants.Default,
  Authenticator.Default,
  CabinetAccounts.Default,
  Ledger.Default,
  Outbox.Default,
  WebhookEvents.Default,
  WebhookDeliveries.Default,
  Deposits.Default,
  ChangeLog.Default,
  CatalogueReservations.Default,
  FeedClients.Default,
  CatalogueEngine.Default,
  PurchaseNotifications.Default,
  // the same layer as Purchases' dependency: built once, so the buys and the worker share it
  PurchaseHandover.Default,
  WalletRequests.Default,
  SupplierSimLive,
  ProviderSimLive,
  WalletProviderSimLive
)

const Services = Layer.mergeAll(
  CatalogueDump.Default,
  NewItems.Default,
  Purchases.Default,
  BuyEngine.Default,
  BuyByName.Default,
  Wallets.Default,
  WalletPayments.Default
).pipe(
  Layer.provideMerge(Core),
  Layer.provideMerge(Base)
)

/**
 * What works behind the merchant API. It is provided to the API so that it is built before it and
 * released after it: on SIGTERM the API drains first (requests under way answered, up to
 * SHUTDOWN_GRACE_SECONDS) while the purchase worker still steps what they bought, the webhook
 * sender still delivers and the ops listener still answers (/ready 503: Http.ts).
 */
const Background = Layer.mergeAll(OpsServerLive, SyncLive, PurchaseWorkerLive, WebhookSenderLive)

export const AppLive = Layer.mergeAll(Layer.provide(FeedShutdownLive, HttpLive), StartupBannerLive).pipe(
  Layer.provide(Background),
  Layer.provide(Services)
)
