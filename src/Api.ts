/** The public merchant API: every group under /api/v1/merchant. OpenAPI is generated from it. */
import { HttpApi, OpenApi } from "@effect/platform"
import { CatalogueApi } from "./Catalogue/Api.js"
import { DepositsApi } from "./Deposits/Api.js"
import { Wire } from "./Domain/Errors.js"
import { BalanceApi } from "./Merchants/Api.js"
import { PurchasesApi } from "./Purchases/Api.js"

/**
 * HttpApi lists its own decode error on every endpoint; this service answers decode failures with
 * the spec's per-field codes instead, so the generic entry is taken out of the document.
 */
const withoutFrameworkErrors = (spec: Record<string, any>) => {
  const isFrameworkRef = (s: unknown) =>
    typeof s === "object" && s !== null && (s as { $ref?: string }).$ref === "#/components/schemas/HttpApiDecodeError"
  for (const path of Object.values(spec.paths ?? {}) as Array<Record<string, any>>) {
    for (const operation of Object.values(path)) {
      const responses = operation?.responses as Record<string, any> | undefined
      const bad = responses?.["400"]
      const schema = bad?.content?.["application/json"]?.schema
      if (schema === undefined) continue
      if (isFrameworkRef(schema)) delete responses!["400"]
      else if (Array.isArray(schema.anyOf)) {
        schema.anyOf = schema.anyOf.filter((s: unknown) => !isFrameworkRef(s))
        if (schema.anyOf.length === 1) bad.content["application/json"].schema = schema.anyOf[0]
      }
    }
  }
  delete spec.components?.schemas?.HttpApiDecodeError
  delete spec.components?.schemas?.Issue
  delete spec.components?.schemas?.PropertyKey
  return spec
}

export class MerchantApi extends HttpApi.make("merchant")
  .add(BalanceApi)
  .add(DepositsApi)
  .add(CatalogueApi)
  .add(PurchasesApi)
  .addError(Wire.InternalError)
  .prefix("/api/v1/merchant")
  .annotateContext(OpenApi.annotations({
    title: "Merchant Purchasing API",
    version: "1.0.0",
    description: "Browse the live skin catalogue, buy items delivered by trade offer, and follow balance and deposits.",
    transform: withoutFrameworkErrors
  }))
{}
