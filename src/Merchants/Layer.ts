/**
 * The merchants feature as one layer: the merchants with their keys and balances, and the
 * authentication of API keys and cabinet sessions. Needs the database and the settings.
 */
import { Layer } from "effect"
import { Authenticator } from "./Authentication.js"
import { Merchants } from "./Merchants.js"

export const MerchantsLive = Layer.mergeAll(Merchants.Default, Authenticator.Default)
