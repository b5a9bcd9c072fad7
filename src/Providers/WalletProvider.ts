/**
 * The deposit wallet provider port (spec 2.3, 3.2; CONTRACT 5.4). Creation is idempotent on a key
 * the service derives from its durable wallet request, so asking again (after a lost answer, a
 * crash, a concurrent request) is the same wallet, never a second one; reads go by that key. The
 * provider reports payments to wallets as signed callbacks, verified here before anything is
 * credited. The simulator implements it in test mode; a real provider's adapter implements the same.
 */
import { Context, Data, type Effect, type Either } from "effect"
import type { Network } from "../Domain/WalletAddress.js"

export interface ProviderWallet {
  readonly providerWalletId: string
  /** `pending` until the provider has bound an address. */
  readonly state: "pending" | "bound"
  readonly address: string | null
  readonly memo: string | null
  readonly status: "active" | "disabled"
}

/**
 * The provider could not be reached or did not answer. `maybeReached`: the request may have reached
 * it (the answer was lost), so whether it acted is unknown until a read says.
 */
export class WalletProviderUnavailable extends Data.TaggedError("WalletProviderUnavailable")<{
  readonly detail: string
  readonly maybeReached: boolean
}> {}

/** A payment to a wallet, as the provider's verified callback reports it. */
export interface PaymentNotice {
  /** The provider's id of the transfer: a payment is credited once per transfer id. */
  readonly transferId: string
  readonly providerWalletId: string
  readonly network: Network
  readonly address: string
  /** USDT received, as the provider wrote it (a decimal). */
  readonly amount: string
  readonly txHash: string | null
  /** The wallet's status at the provider when the payment arrived. */
  readonly walletStatus: "active" | "disabled"
}

export interface WalletProviderService {
  /** The provider's name, as DepositWallet.provider and DepositItem.provider show it. */
  readonly name: string
  readonly createWallet: (request: {
    readonly idempotencyKey: string
    readonly merchantId: string
    readonly network: Network
  }) => Effect.Effect<ProviderWallet, WalletProviderUnavailable>
  /** The wallet created under `idempotencyKey`, if the provider has one. */
  readonly findWallet: (idempotencyKey: string) => Effect.Effect<ProviderWallet | undefined, WalletProviderUnavailable>
  /**
   * A callback's payment, if its signature and timestamp verify (the raw body as received);
   * otherwise why not.
   */
  readonly verifyCallback: (
    headers: Readonly<Record<string, string | undefined>>,
    rawBody: string
  ) => Effect.Effect<Either.Either<PaymentNotice, string>>
}

export class WalletProvider extends Context.Tag("WalletProvider")<WalletProvider, WalletProviderService>() {}
