/** The public merchant API: every group under /api/v1/merchant. OpenAPI is generated from it. */
import { HttpApi, OpenApi } from "@effect/platform"
import { CatalogueApi } from "./Catalogue/Api.js"
import { DepositsApi } from "./Deposits/Api.js"
import { Wire } from "./Domain/Errors.js"
import { BalanceApi } from "./Merchants/Api.js"
import { PurchasesApi } from "./Purchases/Api.js"
import { WebhooksApi } from "./Webhooks/Api.js"

type Json = { [key: string]: unknown }
const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)
const FRAMEWORK_REF = "#/components/schemas/HttpApiDecodeError"

/**
 * HttpApi lists its own decode error on every endpoint; this service answers decode failures with
 * the spec's per-field codes instead, so the generic entry is taken out of the document.
 */
const withoutFrameworkErrors = (spec: Json): Json => {
  const paths = isObject(spec["paths"]) ? spec["paths"] : {}
  for (const path of Object.values(paths)) {
    if (!isObject(path)) continue
    for (const operation of Object.values(path)) {
      const responses = isObject(operation) && isObject(operation["responses"]) ? operation["responses"] : undefined
      const bad = responses?.["400"]
      const content = isObject(bad) && isObject(bad["content"]) ? bad["content"] : undefined
      const media = content !== undefined && isObject(content["application/json"]) ? content["application/json"] : undefined
      const schema = media !== undefined && isObject(media["schema"]) ? media["schema"] : undefined
      if (responses === undefined || media === undefined || schema === undefined || !isObject(bad)) continue
      if (schema["$ref"] === FRAMEWORK_REF) {
        delete responses["400"]
      } else if (Array.isArray(schema["anyOf"])) {
        const kept = schema["anyOf"].filter((s) => !(isObject(s) && s["$ref"] === FRAMEWORK_REF))
        media["schema"] = kept.length === 1 ? kept[0] : { ...schema, anyOf: kept }
        bad["description"] = "The request is invalid: `error.code` names the field (spec 7.2)."
      }
    }
  }
  const components = isObject(spec["components"]) && isObject(spec["components"]["schemas"]) ? spec["components"]["schemas"] : {}
  for (const name of ["HttpApiDecodeError", "Issue", "PropertyKey"]) delete components[name]
  return spec
}

/** Where every merchant route lives. */
export const API_PREFIX = "/api/v1/merchant"

export class MerchantApi extends HttpApi.make("merchant")
  .add(BalanceApi)
  .add(DepositsApi)
  .add(CatalogueApi)
  .add(PurchasesApi)
  .add(WebhooksApi)
  .addError(Wire.InternalError)
  .prefix(API_PREFIX)
  .annotateContext(OpenApi.annotations({
    title: "Merchant Purchasing API",
    version: "1.0.0",
    description: "Browse the live skin catalogue, buy items delivered by trade offer, and follow balance and deposits.",
    transform: withoutFrameworkErrors
  }))
{}
