/**
 * The simulated deposit wallet provider (CONTRACT 5.4), behind the WalletProvider port. Its records
 * live in its own tables, as a real provider's live on its side, so they outlive a restart of the
 * service. Creation binds an address after a delay (1 s x SIM_TIME_SCALE) and answers then; one
 * merchant and network in ten (by a hash of both) loses that answer once, the wallet created all
 * the same. Test mode can switch the provider off (every call fails: the 502 path), set a wallet
 * active or disabled, and make a payment to it, which arrives as a signed callback to the service's
 * callback endpoint, retried until it is answered 2xx, as a real provider does.
 */
import { Context, Duration, Effect, Either, FiberSet, Layer, Option, Schedule, Schema } from "effect"
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto"
import { Settings } from "../../Config.js"
import { bscAddress, type Network, tronAddress } from "../../Domain/WalletAddress.js"
import { type PaymentNotice, type ProviderWallet, WalletProvider, WalletProviderUnavailable } from "../WalletProvider.js"
import { SimulatorRepo, type SimWalletRow } from "./Repo.js"

export const SIM_WALLET_PROVIDER = "walletpay"
/** Where the simulator posts payment callbacks, on the merchant API listener (Http.ts). */
export const WALLET_CALLBACK_PATH = "/provider/walletpay/callbacks"
export const CALLBACK_TIMESTAMP_HEADER = "x-walletpay-timestamp"
export const CALLBACK_SIGNATURE_HEADER = "x-walletpay-signature"
const CALLBACK_TOLERANCE_SECONDS = 300
const BIND_DELAY_MS = 1_000

/** Whether the simulator loses the answer to a creation for this merchant and network (once). */
export const losesCreationAnswer = (merchantId: string, network: Network): boolean =>
  createHash("sha256").update(`${merchantId}:${network}`).digest()[0]! % 10 === 0

const CallbackBody = Schema.Struct({
  transfer_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  provider_wallet_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  network: Schema.Literal("tron", "bsc"),
  address: Schema.String.pipe(Schema.maxLength(200)),
  amount: Schema.String.pipe(Schema.pattern(/^\d{1,12}(\.\d{1,6})?$/)),
  currency: Schema.Literal("USDT"),
  tx_hash: Schema.NullOr(Schema.String.pipe(Schema.maxLength(200))),
  wallet_status: Schema.Literal("active", "disabled")
})
const decodeCallback = Schema.decodeUnknownEither(Schema.parseJson(CallbackBody))

export class SimWalletNotFound extends Schema.TaggedError<SimWalletNotFound>()("SimWalletNotFound", {}) {}

/** Test-mode controls of the simulated provider (the admin API's /admin/simulator/*). */
export class WalletProviderSim extends Context.Tag("WalletProviderSim")<WalletProviderSim, {
  readonly setAvailable: (available: boolean) => Effect.Effect<void>
  readonly setStatus: (idempotencyKey: string, status: "active" | "disabled") => Effect.Effect<void, SimWalletNotFound>
  /** Sends the payment's callback (in the background, retried until answered); its transfer id. */
  readonly pay: (idempotencyKey: string, amount: string, transferId: string | undefined) => Effect.Effect<string, SimWalletNotFound>
}>() {}

export const WalletProviderSimLive = Layer.scopedContext(Effect.gen(function*() {
  const repo = yield* SimulatorRepo
  const settings = yield* Settings
  const callbacks = yield* FiberSet.make()
  let available = true

  yield* repo.insertSecret(randomBytes(32).toString("base64url"))
  const { secret } = yield* repo.readSecret
  const signatureOf = (timestamp: string, body: string) => createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")

  const unavailable = Effect.fail(new WalletProviderUnavailable({ detail: "the wallet provider is unavailable (test mode)", maybeReached: false }))

  const rowByKey = (key: string) => repo.findWallet(key).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

  const walletAt = (row: SimWalletRow, now: number): ProviderWallet =>
    row.bindsAt.getTime() <= now
      ? { providerWalletId: row.providerWalletId, state: "bound", address: row.address, memo: row.memo, status: row.status }
      : { providerWalletId: row.providerWalletId, state: "pending", address: null, memo: null, status: row.status }

  const createWallet = (request: { readonly idempotencyKey: string; readonly merchantId: string; readonly network: Network }) =>
    Effect.gen(function*() {
      if (!available) return yield* unavailable
      // the provider has the request from here on, whatever becomes of its answer
      const account = createHash("sha256").update(`walletpay:${request.idempotencyKey}`).digest()
      const bindDelayMs = Math.round(BIND_DELAY_MS * settings.simTimeScale)
      yield* repo.insertWallet({
        idempotencyKey: request.idempotencyKey,
        providerWalletId: `wp_${account.subarray(20, 32).toString("hex")}`,
        merchantId: request.merchantId,
        network: request.network,
        address: request.network === "tron" ? tronAddress(account) : bscAddress(account),
        bindSeconds: bindDelayMs / 1000
      }).pipe(Effect.orDie)
      const row = (yield* rowByKey(request.idempotencyKey))!
      const wait = row.bindsAt.getTime() - Date.now()
      if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
      if (losesCreationAnswer(request.merchantId, request.network) && !row.responseLost) {
        yield* repo.markResponseLost(request.idempotencyKey).pipe(Effect.orDie)
        return yield* new WalletProviderUnavailable({ detail: "the wallet provider's answer was lost (test mode)", maybeReached: true })
      }
      // bound once the wait is over (a timer may fire a hair before the wall clock says so)
      return walletAt(row, Math.max(Date.now(), row.bindsAt.getTime()))
    }).pipe(Effect.withSpan("WalletProviderSim.createWallet"))

  const findWallet = (idempotencyKey: string) =>
    available
      ? Effect.map(rowByKey(idempotencyKey), (row) => (row === undefined ? undefined : walletAt(row, Date.now())))
      : unavailable

  const verifyCallback = (headers: Readonly<Record<string, string | undefined>>, rawBody: string) =>
    Effect.sync((): Either.Either<PaymentNotice, string> => {
      const timestamp = headers[CALLBACK_TIMESTAMP_HEADER] ?? ""
      const signature = headers[CALLBACK_SIGNATURE_HEADER] ?? ""
      if (!/^\d{1,15}$/.test(timestamp)) return Either.left("missing or malformed timestamp")
      if (Math.abs(Date.now() / 1000 - Number(timestamp)) > CALLBACK_TOLERANCE_SECONDS) return Either.left("timestamp outside the 300 s window")
      const expected = Buffer.from(signatureOf(timestamp, rawBody), "utf8")
      const given = Buffer.from(signature, "utf8")
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return Either.left("signature does not verify")
      return Either.map(decodeCallback(rawBody), (body) => ({
        transferId: body.transfer_id,
        providerWalletId: body.provider_wallet_id,
        network: body.network,
        address: body.address,
        amount: body.amount,
        txHash: body.tx_hash,
        walletStatus: body.wallet_status
      })).pipe(Either.mapLeft(() => "body is not a payment notice"))
    })

  const setStatus = (idempotencyKey: string, status: "active" | "disabled") =>
    repo.setWalletStatus(idempotencyKey, status).pipe(
      Effect.orDie,
      Effect.flatMap((found) => (found ? Effect.void : Effect.fail(new SimWalletNotFound())))
    )

  const callbackUrl = `http://${settings.host === "0.0.0.0" || settings.host === "::" ? "127.0.0.1" : settings.host}:${settings.port}${WALLET_CALLBACK_PATH}`

  /** Posts a signed callback until it is answered 2xx (a few tries over about a minute). */
  const deliver = (body: string) =>
    Effect.tryPromise(async () => {
      const timestamp = String(Math.floor(Date.now() / 1000))
      const response = await fetch(callbackUrl, {
        method: "POST",
        headers: { "content-type": "application/json", [CALLBACK_TIMESTAMP_HEADER]: timestamp, [CALLBACK_SIGNATURE_HEADER]: signatureOf(timestamp, body) },
        body,
        signal: AbortSignal.timeout(10_000)
      })
      await response.arrayBuffer()
      if (response.status < 200 || response.status >= 300) throw new Error(`callback answered ${response.status}`)
    }).pipe(
      Effect.retry(Schedule.exponential("200 millis").pipe(Schedule.intersect(Schedule.recurs(8)))),
      Effect.catchAll((error) => Effect.logWarning("simulated wallet provider: payment callback not delivered", error))
    )

  const pay = (idempotencyKey: string, amount: string, transferId: string | undefined) =>
    Effect.gen(function*() {
      const row = yield* rowByKey(idempotencyKey)
      if (row === undefined || row.bindsAt.getTime() > Date.now()) return yield* new SimWalletNotFound()
      const id = transferId ?? `wptr_${randomUUID()}`
      const body = JSON.stringify({
        transfer_id: id,
        provider_wallet_id: row.providerWalletId,
        network: row.network,
        address: row.address,
        amount,
        currency: "USDT",
        tx_hash: `0x${createHash("sha256").update(id).digest("hex")}`,
        wallet_status: row.status
      })
      yield* FiberSet.run(callbacks, deliver(body))
      return id
    })

  return Context.make(WalletProvider, { name: SIM_WALLET_PROVIDER, createWallet, findWallet, verifyCallback }).pipe(
    Context.add(WalletProviderSim, {
      setAvailable: (value: boolean) =>
        Effect.sync(() => {
          available = value
        }),
      setStatus,
      pay
    })
  )
})).pipe(Layer.provide(SimulatorRepo.Default))
