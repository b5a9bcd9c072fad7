/** Deposit fees and confirmed deposits (spec 2.4, 2.5, 4.1). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { IsoDateTime } from "../Domain/Db.js"
import { failsAs, WalletNetworkInvalid, WalletNotFound, Wire } from "../Domain/Errors.js"
import { NextCursor, PageQuery } from "../Domain/Page.js"
import { KeyOrSession, Usd } from "../Merchants/Api.js"

export const DepositFees = Schema.Struct({
  currency: Schema.Literal("USD"),
  tiers: Schema.Array(Schema.Struct({
    min_amount: Schema.Number.annotations({ description: "Inclusive USD lower bound." }),
    max_amount: Schema.NullOr(Schema.Number).annotations({ description: "Exclusive upper bound; null is unbounded." }),
    percent: Schema.Number.annotations({ description: "1 means 1 percent." })
  }))
}).annotations({ identifier: "DepositFees" })

export const DepositItem = Schema.Struct({
  id: Schema.UUID,
  provider: Schema.String,
  amount: Usd.annotations({ description: "Credited USD after the tier commission, not the amount sent." }),
  currency: Schema.Literal("USD"),
  network: Schema.NullOr(Schema.Literal("tron", "bsc")),
  destination: Schema.NullOr(Schema.String),
  tx_id: Schema.NullOr(Schema.String),
  status: Schema.Literal("paid"),
  created_at: IsoDateTime
}).annotations({ identifier: "DepositItem" })

export const DepositList = Schema.Struct({
  deposits: Schema.Array(DepositItem),
  next_cursor: NextCursor
}).annotations({ identifier: "DepositList" })

export const DepositWallet = Schema.Struct({
  id: Schema.UUID,
  provider: Schema.String.annotations({ description: "The wallet provider (its single allowed value)." }),
  currency: Schema.Literal("USDT"),
  network: Schema.Literal("tron", "bsc"),
  status: Schema.Literal("prepared", "creation_started", "requires_reconciliation", "bound").annotations({
    description: "prepared: saved, provider creation not started; creation_started: read or reconcile, never request a replacement; " +
      "requires_reconciliation: result unknown, reconcile; bound: a validated address is saved."
  }),
  address: Schema.NullOr(Schema.String).annotations({ description: "Present only after a validated binding." }),
  memo: Schema.NullOr(Schema.String).annotations({ description: "When not null, shown apart from the address; a QR code holds the address alone." }),
  can_deposit: Schema.Boolean.annotations({
    description: "True only when the wallet is bound, its last saved provider status is active and settlement is verified. False: do not send funds."
  }),
  created_at: IsoDateTime,
  updated_at: IsoDateTime
}).annotations({
  identifier: "DepositWallet",
  examples: [{
    id: "5c2e8f1a-3b4d-4c6e-9f7a-8b1c2d3e4f50",
    provider: "walletpay",
    currency: "USDT",
    network: "tron",
    status: "bound",
    address: "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8",
    memo: null,
    can_deposit: true,
    created_at: "2026-11-27T12:00:00.000Z",
    updated_at: "2026-11-27T12:00:01.000Z"
  }]
})

export const DepositWalletList = Schema.Struct({
  issuance_enabled: Schema.Boolean.annotations({ description: "Provider routing for new merchant wallets." }),
  can_create: Schema.Boolean.annotations({ description: "Issuance, writes and verified settlement are all enabled." }),
  wallets: Schema.Array(DepositWallet)
}).annotations({ identifier: "DepositWalletList" })

export class DepositsApi extends HttpApiGroup.make("deposits")
  .add(HttpApiEndpoint.get("getFees", "/deposits/fees").addSuccess(DepositFees))
  .add(
    HttpApiEndpoint.get("listDeposits", "/deposits")
      .setUrlParams(Schema.Struct(PageQuery))
      .addSuccess(DepositList)
      .addError(Wire.InvalidQuery)
  )
  .add(HttpApiEndpoint.get("listWallets", "/deposits/wallets").addSuccess(DepositWalletList))
  .add(
    HttpApiEndpoint.post("requestWallet", "/deposits/wallets")
      .setPayload(Schema.Struct({ network: Schema.Literal("tron", "bsc").annotations(failsAs(WalletNetworkInvalid)) }))
      .addSuccess(DepositWallet)
      .addError(Wire.WalletNetworkInvalid)
      .addError(Wire.WalletIssuanceDisabled)
      .addError(Wire.WalletProviderUnavailable)
  )
  .add(
    HttpApiEndpoint.post("reconcileWallet", "/deposits/wallets/:walletId/reconcile")
      .setPath(Schema.Struct({ walletId: Schema.UUID.annotations(failsAs(WalletNotFound)) }))
      .addSuccess(DepositWallet)
      .addError(Wire.WalletNotFound)
      .addError(Wire.WalletCreationNotStarted)
      .addError(Wire.WalletProviderUnavailable)
  )
  .middleware(KeyOrSession)
  .annotate(OpenApi.Title, "Deposits")
{}
