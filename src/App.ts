/** The whole service as one layer, given its Settings: what main.ts runs and e2e tests start. */
import { Layer } from "effect"
import { DatabaseLive } from "./Db/Database.js"
import { Deposits } from "./Deposits/Deposits.js"
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
import { Outbox } from "./Webhooks/Outbox.js"

const Services = Layer.mergeAll(
  Fibers.Default,
  Metrics.Default,
  Readiness.Default,
  AdminToken.Default,
  Merchants.Default,
  Authenticator.Default,
  Ledger.Default,
  Outbox.Default,
  Deposits.Default
)

export const AppLive = Layer.mergeAll(HttpLive, OpsServerLive, StartupBannerLive).pipe(
  Layer.provide(Services),
  Layer.provide(DatabaseLive)
)
