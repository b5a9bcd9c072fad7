/**
 * The ledger feature as one layer: the balance entries and the balances read from them. Needs the
 * database and the settings.
 */
import { Ledger } from "./Ledger.js"

export const LedgerLive = Ledger.Default
