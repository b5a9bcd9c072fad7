/**
 * The admin API of the ops listener (CONTRACT 2), all under `Authorization: Bearer <ADMIN_TOKEN>`,
 * errors in the spec's Error shape. Handlers only decode, call services and shape answers.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Data, Effect, Option, ParseResult, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { ChangeLog } from "../Catalogue/ChangeLog.js"
import { CatalogueEngine } from "../Catalogue/Engine.js"
import { DepositAmountInvalid, Deposits } from "../Deposits/Deposits.js"
import { CatalogItemInput } from "../Domain/CatalogItem.js"
import { unstorableMessage, unstorablePath } from "../Domain/Db.js"
import { boundedMessage, errorBody } from "../Domain/Errors.js"
import { toUnits } from "../Domain/Money.js"
import type { Merchant } from "../Domain/Merchant.js"
import { MerchantStatus } from "../Domain/Merchant.js"
import { Merchants } from "../Merchants/Merchants.js"
import { type BodyProblem, bodyProblemMessage, bodyProblemOf } from "../RequestBody.js"
import { AdminToken } from "./AdminToken.js"

export class AdminError extends Data.TaggedError("AdminError")<{
  readonly status: number
  readonly code: string
  readonly message: string
}> {}

const invalid = (message: string) => new AdminError({ status: 400, code: "ADMIN_INVALID_REQUEST", message })
const notFound = (what: string) => new AdminError({ status: 404, code: "ADMIN_NOT_FOUND", message: `${what} not found` })

const json = (body: unknown, status = 200) => HttpServerResponse.unsafeJson(body, { status })

const WebhookUrl = Schema.NullOr(Schema.String.pipe(
  Schema.maxLength(2048),
  Schema.filter((s) => {
    try {
      const url = new URL(s)
      return url.protocol === "https:" || url.protocol === "http:"
    } catch {
      return false
    }
  }, { message: () => "webhook_url must be an http(s) URL" })
))

const CreateMerchant = Schema.Struct({
  // a name is shown in tables, logs and the CLI: one line of printable text
  name: Schema.String.pipe(Schema.trimmed(), Schema.minLength(1), Schema.maxLength(100), Schema.filter((name) =>
    !/\p{Cc}/u.test(name) || "name must not contain control characters (line breaks, tabs)")),
  webhook_url: Schema.optionalWith(WebhookUrl, { default: () => null })
})
const PatchMerchant = Schema.Struct({
  status: Schema.optional(MerchantStatus),
  webhook_url: Schema.optional(WebhookUrl)
})
const LegacyAddresses = Schema.Struct({
  trc20: Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128))),
  bep20: Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128)))
})
const SimulatedDeposit = Schema.Struct({
  merchant_id: Schema.UUID,
  network: Schema.Literal("tron", "bsc"),
  amount: Schema.Number,
  tx_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
})

/** The first problem of a body, as `field.path: message` (the whole schema tree is too long to read). */
const firstIssue = (error: ParseResult.ParseError) => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  return issue === undefined ? "invalid body" : boundedMessage(`${issue.path.length > 0 ? issue.path.join(".") : "body"}: ${issue.message}`)
}

/** A body refused as it was read (RequestBody.ts): too large is 413, the rest 400. */
const refusedBody = (problem: BodyProblem) =>
  problem._tag === "TooLarge"
    ? new AdminError({ status: 413, code: "ADMIN_BODY_TOO_LARGE", message: bodyProblemMessage(problem) })
    : invalid(bodyProblemMessage(problem))

/**
 * The JSON body decoded by `schema`; unreadable, refused or invalid bodies, or a string the database
 * cannot hold as it is (Db.ts `unstorablePath`), are 400.
 */
const body = <A, I>(schema: Schema.Schema<A, I>) =>
  HttpServerRequest.schemaBodyJson(schema, { onExcessProperty: "ignore" }).pipe(
    Effect.catchAll((error) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const problem = bodyProblemOf(NodeHttpServerRequest.toIncomingMessage(request))
        return Effect.fail(
          problem !== undefined ? refusedBody(problem)
          : ParseResult.isParseError(error) ? invalid(firstIssue(error))
          : invalid("body must be JSON")
        )
      })
    ),
    Effect.flatMap((decoded) => {
      const unstorable = unstorablePath(decoded)
      return unstorable === undefined ? Effect.succeed(decoded) : Effect.fail(invalid(unstorableMessage(unstorable)))
    })
  )

const CatalogueItems = Schema.Struct({
  items: Schema.Array(CatalogItemInput.pipe(Schema.filter((item) =>
    toUnits(item.price, 2) !== undefined || "price must have at most two decimals")))
})

/** The `:id` path parameter. */
const pathId = HttpRouter.params.pipe(Effect.map((p) => p["id"] ?? ""))

export const merchantView = (m: Merchant) => ({
  merchant_id: m.id,
  name: m.name,
  status: m.status,
  webhook_url: m.webhookUrl,
  deposit_addresses: { trc20: m.legacyTrc20, bep20: m.legacyBep20 },
  created_at: m.createdAt.toISOString(),
  updated_at: m.updatedAt.toISOString()
})

const found = <A>(what: string) => (option: Option.Option<A>) =>
  Option.match(option, { onNone: () => Effect.fail(notFound(what)), onSome: Effect.succeed })

export const AdminRoutes = Effect.gen(function*() {
  const merchants = yield* Merchants
  const deposits = yield* Deposits
  const adminToken = yield* AdminToken
  const changeLog = yield* ChangeLog
  const engine = yield* CatalogueEngine

  const routes = HttpRouter.empty.pipe(
    HttpRouter.post("/admin/merchants", Effect.gen(function*() {
      const input = yield* body(CreateMerchant)
      const created = yield* merchants.create({ name: input.name, webhookUrl: input.webhook_url }).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new AdminError({ status: 409, code: "ADMIN_CONFLICT", message: `merchant name ${input.name} is taken` })),
          onSome: Effect.succeed
        }))
      )
      return json({
        merchant_id: created.merchant.id,
        name: created.merchant.name,
        status: created.merchant.status,
        api_key: created.apiKey,
        webhook_secret: created.webhookSecret,
        webhook_url: created.merchant.webhookUrl
      }, 201)
    })),
    HttpRouter.get("/admin/merchants/:id", Effect.gen(function*() {
      const merchant = yield* pathId.pipe(Effect.flatMap(merchants.get), Effect.flatMap(found("merchant")))
      return json(merchantView(merchant))
    })),
    HttpRouter.patch("/admin/merchants/:id", Effect.gen(function*() {
      const id = yield* pathId
      const changes = yield* body(PatchMerchant)
      const merchant = yield* merchants.update(id, { status: changes.status, webhookUrl: changes.webhook_url }).pipe(
        Effect.flatMap(found("merchant"))
      )
      return json(merchantView(merchant))
    })),
    HttpRouter.post("/admin/merchants/:id/api-key", Effect.gen(function*() {
      const apiKey = yield* pathId.pipe(Effect.flatMap(merchants.rotateApiKey), Effect.flatMap(found("merchant")))
      return json({ api_key: apiKey }, 201)
    })),
    HttpRouter.post("/admin/merchants/:id/webhook-secret", Effect.gen(function*() {
      const secret = yield* pathId.pipe(Effect.flatMap(merchants.rotateWebhookSecret), Effect.flatMap(found("merchant")))
      return json({ webhook_secret: secret }, 201)
    })),
    HttpRouter.put("/admin/merchants/:id/legacy-addresses", Effect.gen(function*() {
      const id = yield* pathId
      const addresses = yield* body(LegacyAddresses)
      const merchant = yield* merchants.setLegacyAddresses(id, addresses).pipe(Effect.flatMap(found("merchant")))
      return json(merchantView(merchant))
    })),
    HttpRouter.post("/admin/deposits", Effect.gen(function*() {
      const input = yield* body(SimulatedDeposit)
      const deposit = yield* deposits.credit({
        merchantId: input.merchant_id,
        network: input.network,
        amount: input.amount,
        txId: input.tx_id
      }).pipe(Effect.catchTags({
        DepositMerchantNotFound: () => Effect.fail(notFound("merchant")),
        DepositAmountInvalid: (e: DepositAmountInvalid) => Effect.fail(invalid(e.message)),
        DepositTxIdConflict: (e) =>
          Effect.fail(new AdminError({ status: 409, code: "ADMIN_CONFLICT", message: `tx_id ${e.txId} was credited with another merchant, network or amount` }))
      }))
      return json(deposit, 201)
    })),
    HttpRouter.put("/admin/catalogue/items", Effect.gen(function*() {
      const input = yield* body(CatalogueItems)
      const writes = input.items.map(({ sim, id, has_stickers, stickers_count, ...item }) => ({
        op: "upsert" as const,
        listing: {
          item: {
            ...item,
            id: (id ?? randomUUID()).toLowerCase(),
            has_stickers: has_stickers ?? item.stickers.length > 0,
            stickers_count: stickers_count ?? item.stickers.length
          },
          providerPriceCents: Math.floor(Number(toUnits(item.price, 2)) * 100 / 107),
          sim
        }
      }))
      yield* changeLog.apply(writes, "admin")
      // this node answers reads of what it just wrote
      yield* engine.refresh
      return json({ upserted: writes.length, ids: writes.map((w) => w.listing.item.id) })
    })),
    HttpRouter.del("/admin/catalogue/items/:id", Effect.gen(function*() {
      const id = yield* pathId
      if (!Schema.is(Schema.UUID)(id)) return yield* notFound("item")
      const removed = yield* changeLog.apply([{ op: "remove", id }], "admin")
      if (removed === 0) return yield* notFound("active item")
      yield* engine.refresh
      return HttpServerResponse.empty({ status: 204 })
    }))
  )

  /** Every admin route checks the token first; admin errors become the spec's Error body. */
  return routes.pipe(
    HttpRouter.use((app) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        if (!adminToken.verify(request.headers["authorization"])) {
          return yield* new AdminError({ status: 401, code: "ADMIN_UNAUTHORIZED", message: "admin token required" })
        }
        return yield* app
      }).pipe(
        Effect.catchTag("AdminError", (e) =>
          Effect.succeed(HttpServerResponse.text(errorBody(e.code, e.message), { status: e.status, contentType: "application/json" })))
      )
    )
  )
})
