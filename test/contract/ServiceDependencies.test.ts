/**
 * Every service declares its neighbours (`dependencies`) and every feature's layer brings its
 * services: each needs nothing but the outside world (the database's services, the settings and
 * the providers' ports), checked by the type checker below. The test beside it checks that the
 * list covers every service in src/, so a new one is checked too.
 */
import type { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import type { Layer } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { CabinetAccounts } from "../../src/Cabinet/Accounts.js"
import { CabinetAccountsRepo } from "../../src/Cabinet/AccountsRepo.js"
import { CabinetAttemptsRepo } from "../../src/Cabinet/AttemptsRepo.js"
import { CabinetBrakes } from "../../src/Cabinet/Brakes.js"
import { CabinetLive } from "../../src/Cabinet/Layer.js"
import { PasswordHasher } from "../../src/Cabinet/Secrets.js"
import { ChangeLog } from "../../src/Catalogue/ChangeLog.js"
import { ChangeLogRepo } from "../../src/Catalogue/ChangeLogRepo.js"
import { CatalogueDump } from "../../src/Catalogue/Dump.js"
import { CatalogueEngine } from "../../src/Catalogue/Engine.js"
import { FeedClients } from "../../src/Catalogue/FeedClients.js"
import { CatalogueLive } from "../../src/Catalogue/Layer.js"
import { NewItems } from "../../src/Catalogue/NewItems.js"
import { NewItemsRepo } from "../../src/Catalogue/NewItemsRepo.js"
import { CatalogueRepo } from "../../src/Catalogue/Repo.js"
import { CatalogueReservations } from "../../src/Catalogue/Reservations.js"
import { Settings } from "../../src/Config.js"
import type { DirectTransactions } from "../../src/Db/Database.js"
import type { DbNotifications } from "../../src/Db/Notifications.js"
import { Deposits } from "../../src/Deposits/Deposits.js"
import { DepositsLive } from "../../src/Deposits/Layer.js"
import { DepositsRepo } from "../../src/Deposits/Repo.js"
import { WalletPayments } from "../../src/Deposits/WalletPayments.js"
import { Wallets } from "../../src/Deposits/Wallets.js"
import { WalletsRepo } from "../../src/Deposits/WalletsRepo.js"
import { BalanceCache } from "../../src/Ledger/BalanceCache.js"
import { LedgerLive } from "../../src/Ledger/Layer.js"
import { Ledger } from "../../src/Ledger/Ledger.js"
import { LedgerRepo } from "../../src/Ledger/Repo.js"
import { Authenticator } from "../../src/Merchants/Authentication.js"
import { MerchantsLive } from "../../src/Merchants/Layer.js"
import { Merchants } from "../../src/Merchants/Merchants.js"
import { MerchantsRepo } from "../../src/Merchants/Repo.js"
import { AdminToken } from "../../src/Ops/AdminToken.js"
import { Fibers } from "../../src/Ops/Fibers.js"
import { OpsLive } from "../../src/Ops/Layer.js"
import { Metrics } from "../../src/Ops/Metrics.js"
import { Readiness } from "../../src/Ops/Readiness.js"
import { OpsRepo } from "../../src/Ops/Repo.js"
import type { PurchaseProvider } from "../../src/Providers/PurchaseProvider.js"
import { SimulatorLive } from "../../src/Providers/Simulator/Layer.js"
import { SimulatorRepo } from "../../src/Providers/Simulator/Repo.js"
import type { Supplier } from "../../src/Providers/Supplier.js"
import type { WalletProvider } from "../../src/Providers/WalletProvider.js"
import { BuyByName } from "../../src/Purchases/BuyByName.js"
import { BuyEngine } from "../../src/Purchases/BuyEngine.js"
import { BuyStatements } from "../../src/Purchases/BuyStatements.js"
import { CyclesRepo } from "../../src/Purchases/CyclesRepo.js"
import { PurchaseHandover } from "../../src/Purchases/Handover.js"
import { PurchasesLive } from "../../src/Purchases/Layer.js"
import { PurchaseNotifications } from "../../src/Purchases/Notifications.js"
import { Purchases } from "../../src/Purchases/Purchases.js"
import { PurchasesRepo } from "../../src/Purchases/Repo.js"
import { WorkerRepo } from "../../src/Purchases/WorkerRepo.js"
import { WebhookDeliveries } from "../../src/Webhooks/Deliveries.js"
import { WebhookDeliveriesRepo } from "../../src/Webhooks/DeliveriesRepo.js"
import { WebhookEvents } from "../../src/Webhooks/Events.js"
import { WebhookEventsRepo } from "../../src/Webhooks/EventsRepo.js"
import { WebhooksLive } from "../../src/Webhooks/Layer.js"
import { Outbox } from "../../src/Webhooks/Outbox.js"
import { OutboxRepo } from "../../src/Webhooks/OutboxRepo.js"
import { WebSocketUpgrades } from "../../src/WebSocketUpgrades.js"
import { ROOT } from "../support/paths.js"

/** The outside world: what main.ts (DatabaseLive, Settings) and the providers give. */
type OutsideWorld = SqlClient.SqlClient | PgClient.PgClient | DbNotifications | DirectTransactions | Settings | PurchaseProvider | Supplier | WalletProvider
const needsOnlyTheOutsideWorld = <A, E>(layer: Layer.Layer<A, E, OutsideWorld>) => layer

const services = {
  AdminToken: needsOnlyTheOutsideWorld(AdminToken.Default),
  Authenticator: needsOnlyTheOutsideWorld(Authenticator.Default),
  BalanceCache: needsOnlyTheOutsideWorld(BalanceCache.Default),
  BuyByName: needsOnlyTheOutsideWorld(BuyByName.Default),
  BuyEngine: needsOnlyTheOutsideWorld(BuyEngine.Default),
  BuyStatements: needsOnlyTheOutsideWorld(BuyStatements.Default),
  CabinetAccounts: needsOnlyTheOutsideWorld(CabinetAccounts.Default),
  CabinetAccountsRepo: needsOnlyTheOutsideWorld(CabinetAccountsRepo.Default),
  CabinetAttemptsRepo: needsOnlyTheOutsideWorld(CabinetAttemptsRepo.Default),
  CabinetBrakes: needsOnlyTheOutsideWorld(CabinetBrakes.Default),
  CatalogueDump: needsOnlyTheOutsideWorld(CatalogueDump.Default),
  CatalogueEngine: needsOnlyTheOutsideWorld(CatalogueEngine.Default),
  CatalogueRepo: needsOnlyTheOutsideWorld(CatalogueRepo.Default),
  CatalogueReservations: needsOnlyTheOutsideWorld(CatalogueReservations.Default),
  ChangeLog: needsOnlyTheOutsideWorld(ChangeLog.Default),
  ChangeLogRepo: needsOnlyTheOutsideWorld(ChangeLogRepo.Default),
  CyclesRepo: needsOnlyTheOutsideWorld(CyclesRepo.Default),
  Deposits: needsOnlyTheOutsideWorld(Deposits.Default),
  DepositsRepo: needsOnlyTheOutsideWorld(DepositsRepo.Default),
  FeedClients: needsOnlyTheOutsideWorld(FeedClients.Default),
  Fibers: needsOnlyTheOutsideWorld(Fibers.Default),
  Ledger: needsOnlyTheOutsideWorld(Ledger.Default),
  LedgerRepo: needsOnlyTheOutsideWorld(LedgerRepo.Default),
  Merchants: needsOnlyTheOutsideWorld(Merchants.Default),
  MerchantsRepo: needsOnlyTheOutsideWorld(MerchantsRepo.Default),
  Metrics: needsOnlyTheOutsideWorld(Metrics.Default),
  NewItems: needsOnlyTheOutsideWorld(NewItems.Default),
  NewItemsRepo: needsOnlyTheOutsideWorld(NewItemsRepo.Default),
  OpsRepo: needsOnlyTheOutsideWorld(OpsRepo.Default),
  Outbox: needsOnlyTheOutsideWorld(Outbox.Default),
  OutboxRepo: needsOnlyTheOutsideWorld(OutboxRepo.Default),
  PasswordHasher: needsOnlyTheOutsideWorld(PasswordHasher.Default),
  PurchaseHandover: needsOnlyTheOutsideWorld(PurchaseHandover.Default),
  PurchaseNotifications: needsOnlyTheOutsideWorld(PurchaseNotifications.Default),
  Purchases: needsOnlyTheOutsideWorld(Purchases.Default),
  PurchasesRepo: needsOnlyTheOutsideWorld(PurchasesRepo.Default),
  Readiness: needsOnlyTheOutsideWorld(Readiness.Default),
  Settings: needsOnlyTheOutsideWorld(Settings.Default),
  SimulatorRepo: needsOnlyTheOutsideWorld(SimulatorRepo.Default),
  WalletPayments: needsOnlyTheOutsideWorld(WalletPayments.Default),
  WalletsRepo: needsOnlyTheOutsideWorld(WalletsRepo.Default),
  Wallets: needsOnlyTheOutsideWorld(Wallets.Default),
  WebSocketUpgrades: needsOnlyTheOutsideWorld(WebSocketUpgrades.Default),
  WebhookDeliveries: needsOnlyTheOutsideWorld(WebhookDeliveries.Default),
  WebhookDeliveriesRepo: needsOnlyTheOutsideWorld(WebhookDeliveriesRepo.Default),
  WebhookEvents: needsOnlyTheOutsideWorld(WebhookEvents.Default),
  WebhookEventsRepo: needsOnlyTheOutsideWorld(WebhookEventsRepo.Default),
  WorkerRepo: needsOnlyTheOutsideWorld(WorkerRepo.Default)
}

// the features App.ts composes
export const features = [
  needsOnlyTheOutsideWorld(CabinetLive),
  needsOnlyTheOutsideWorld(CatalogueLive),
  needsOnlyTheOutsideWorld(DepositsLive),
  needsOnlyTheOutsideWorld(LedgerLive),
  needsOnlyTheOutsideWorld(MerchantsLive),
  needsOnlyTheOutsideWorld(OpsLive),
  needsOnlyTheOutsideWorld(SimulatorLive),
  needsOnlyTheOutsideWorld(PurchasesLive),
  needsOnlyTheOutsideWorld(WebhooksLive)
]

/** The services declared in src/ (`export class X extends Effect.Service<X>`), by name. */
const declaredServices = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return declaredServices(path)
    if (!entry.name.endsWith(".ts")) return []
    return [...readFileSync(path, "utf8").matchAll(/export class (\w+) extends Effect\.Service</g)].map((match) => match[1]!)
  })

describe("services and features", () => {
  it("every service of src/ is among those whose layer is checked to need only the outside world", () => {
    expect(Object.keys(services).sort()).toEqual(declaredServices(join(ROOT, "src")).sort())
  })
})
