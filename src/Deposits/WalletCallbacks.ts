/**
 * The wallet provider's payment callbacks arrive here, on the public listener, outside the merchant
 * API (no merchant key: the provider's signature is the credential). The raw body is verified as
 * received. A callback that does not verify is 401 and changes nothing; a verified one is 200 with
 * what became of its payment (a repeat of a transfer is 200 too, and changes nothing).
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { errorBody } from "../Domain/Errors.js"
import { WALLET_CALLBACK_PATH } from "../Providers/Simulator/WalletProviderSim.js"
import { WalletPayments } from "./WalletPayments.js"

export { WALLET_CALLBACK_PATH }

export const WalletCallbacksLive = Layer.unwrapEffect(Effect.gen(function*() {
  const payments = yield* WalletPayments
  const handler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* request.text
    const outcome = yield* payments.receive(request.headers, body)
    return HttpServerResponse.unsafeJson(outcome)
  }).pipe(
    Effect.catchTags({
      CallbackRejected: (e) =>
        Effect.succeed(HttpServerResponse.text(errorBody("PROVIDER_CALLBACK_REJECTED", e.reason), { status: 401, contentType: "application/json" })),
      RequestError: () =>
        Effect.succeed(
          HttpServerResponse.text(errorBody("PROVIDER_CALLBACK_REJECTED", "the body could not be read"), { status: 400, contentType: "application/json" })
        )
    })
  )
  return HttpApiBuilder.Router.use((router) => router.post(WALLET_CALLBACK_PATH, handler))
}))
