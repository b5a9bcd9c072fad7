/**
 * The deposits feature as one layer: crediting payments to the ledger, the merchants' deposit
 * wallets with the requests made of the wallet provider, and the provider's payment callbacks.
 * Needs the database, the settings and a wallet provider.
 */
import { Layer } from "effect"
import { Deposits } from "./Deposits.js"
import { WalletPayments } from "./WalletPayments.js"
import { WalletRequests } from "./WalletRequests.js"
import { Wallets } from "./Wallets.js"

export const DepositsLive = Layer.mergeAll(Deposits.Default, Wallets.Default, WalletRequests.Default, WalletPayments.Default)
