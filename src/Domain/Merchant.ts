import { Schema } from "effect"

export const MerchantStatus = Schema.Literal("active", "blocked", "inactive")
export type MerchantStatus = typeof MerchantStatus.Type

export const MerchantId = Schema.UUID.pipe(Schema.brand("MerchantId"))
export type MerchantId = typeof MerchantId.Type

/** A merchant as stored, without secrets. */
export class Merchant extends Schema.Class<Merchant>("Merchant")({
  id: MerchantId,
  name: Schema.String,
  status: MerchantStatus,
  webhookUrl: Schema.NullOr(Schema.String),
  legacyTrc20: Schema.NullOr(Schema.String),
  legacyBep20: Schema.NullOr(Schema.String),
  createdAt: Schema.DateFromSelf,
  updatedAt: Schema.DateFromSelf
}) {}

/** The merchant a request authenticated as. */
export interface AuthenticatedMerchant {
  readonly id: MerchantId
  readonly name: string
  readonly status: MerchantStatus
}
