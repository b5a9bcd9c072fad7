/**
 * The deposits feature as one layer: crediting payments to the ledger, the merchants' deposit
 * wallets (and their repository, which the admin API reads too) and the wallet provider's payment
 * callbacks. Needs the database, the settings and a wallet provider.
 */
import { Layer } from "effect"
import { Deposits } from "./Deposits.js"
import { WalletPayments } from "./WalletPayments.js"
import { Wallets } from "./Wallets.js"
import { WalletsRepo } from "./WalletsRepo.js"

export const DepositsLive = Layer.mergeAll(Deposits.Default, Wallets.Default, WalletsRepo.Default, WalletPayments.Default)
