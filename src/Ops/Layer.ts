/**
 * The ops feature's services as one layer: the registry of supervised fibers, the metrics, the
 * readiness and the admin token. The ops listener (Server.ts) serves the admin API over every
 * feature, so App.ts provides it with them.
 */
import { Layer } from "effect"
import { AdminToken } from "./AdminToken.js"
import { Fibers } from "./Fibers.js"
import { Metrics } from "./Metrics.js"
import { Readiness } from "./Readiness.js"

export const OpsLive = Layer.mergeAll(Fibers.Default, Metrics.Default, Readiness.Default, AdminToken.Default)
