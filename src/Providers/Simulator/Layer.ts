/**
 * The simulated providers as one layer: the supplier, the purchase provider and the wallet
 * provider the features are given in place of real ones. Needs the database and the settings.
 */
import { Layer } from "effect"
import { ProviderSimLive } from "./ProviderSim.js"
import { SupplierSimLive } from "./SupplierSim.js"
import { WalletProviderSimLive } from "./WalletProviderSim.js"

export const SimulatorLive = Layer.mergeAll(SupplierSimLive, ProviderSimLive, WalletProviderSimLive)
