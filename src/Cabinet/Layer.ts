/**
 * The cabinet feature's services as one layer: the accounts (invites, sign-ins with their brakes,
 * sessions, step-up). Needs the database and the settings.
 */
import { CabinetAccounts } from "./Accounts.js"

export const CabinetLive = CabinetAccounts.Default
