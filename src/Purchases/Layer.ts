/**
 * The purchases feature as one layer: buying (by id and by name), the purchases' reads, their
 * change notifications and the worker that steps what was bought. Each service brings its
 * neighbours (`dependencies`); needs the database, the settings and a purchase provider.
 */
import { Layer } from "effect"
import { Ledger } from "../Ledger/Ledger.js"
import { Fibers } from "../Ops/Fibers.js"
import { Metrics } from "../Ops/Metrics.js"
import { Outbox } from "../Webhooks/Outbox.js"
import { BuyByName } from "./BuyByName.js"
import { BuyEngine } from "./BuyEngine.js"
import { PurchaseHandover } from "./Handover.js"
import { PurchaseNotifications } from "./Notifications.js"
import { Purchases } from "./Purchases.js"
import { PurchaseWorkerLive } from "./Worker.js"
import { WorkerRepo } from "./WorkerRepo.js"

// the handover is the same layer as the buy engine's dependency: built once, so the worker steps what the engine hands over
const Worker = PurchaseWorkerLive.pipe(
  Layer.provide([Ledger.Default, Outbox.Default, PurchaseNotifications.Default, Fibers.Default, Metrics.Default, PurchaseHandover.Default, WorkerRepo.Default])
)

export const PurchasesLive = Layer.mergeAll(Purchases.Default, BuyEngine.Default, BuyByName.Default, PurchaseNotifications.Default, Worker)
