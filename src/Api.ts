/** The public merchant API: every group under /api/v1/merchant, and the cabinet's under /cabinet/api. OpenAPI is generated from it. */
import { HttpApi, OpenApi } from "@effect/platform"
import { completeDocument } from "./ApiDocument.js"
import { OVERVIEW } from "./ApiReference.js"
import { CabinetApi, CabinetSignInApi } from "./Cabinet/Api.js"
import { CatalogueApi } from "./Catalogue/Api.js"
import { DepositsApi } from "./Deposits/Api.js"
import { Wire } from "./Domain/Errors.js"
import { BalanceApi } from "./Merchants/Api.js"
import { PurchasesApi } from "./Purchases/Api.js"
import { WebhooksApi } from "./Webhooks/Api.js"

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
  // the cabinet's JSON endpoints sit under their own prefix (CONTRACT 7)
  .add(CabinetSignInApi)
  .add(CabinetApi)
  .annotateContext(OpenApi.annotations({
    title: "Merchant Purchasing API",
    version: "1.0.0",
    description: OVERVIEW,
    transform: completeDocument
  }))
{}
