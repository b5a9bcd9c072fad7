/**
 * The Effect "ladder" of bench/diagnostics/ladder.mjs: GET /api/v1/merchant/balance (same body bytes as
 * the service) built up one Effect layer at a time, to show where the service's per-request CPU
 * goes between the bare baseline and the real service. Environment: LEVEL, PORT, DATABASE_URL.
 */
// LEVEL:
//  L0 Effect HttpRouter raw route + plain pg Pool (Effect.async), HTTP tracer disabled
//  L1 L0 with tracing on (the platform's default: one span per request)
//  L2 L0 with @effect/sql-pg (sql.unsafe, 1 join query)
//  L3 HttpApi endpoint (success schema) + SqlSchema.findOne decode; no middleware; 1 join query
//  L4 L3 + HttpApiMiddleware security bearer (in-memory key cache, like the service) + 1 balance query
//  L5 L4 + runtime metrics flag + request middleware (uuid, pre-response handler, annotateLogs)
//  All but L1 run with tracing off (Layer.setTracerEnabled(false) and the HTTP tracer disabled),
//  as the service does since 855012a.
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSecurity,
  HttpApp,
  HttpMiddleware,
  HttpRouter,
  HttpServer,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { SqlClient, SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Redacted, RuntimeFlags, Schema } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const LEVEL = process.env.LEVEL
const PATH = "/api/v1/merchant/balance"
const KEY = /^mer_live_[A-Za-z0-9_-]{32}$/
const hash = (k) => createHash("sha256").update(k).digest("hex")
const usd = (c) => Number(c) / 100
const JOIN_SQL =
  `SELECT b.available_cents AS available, b.on_hold_cents AS "onHold", b.total_deposited_cents AS "totalDeposited", b.total_spent_cents AS "totalSpent", m.legacy_trc20 AS trc20, m.legacy_bep20 AS bep20
  FROM api_keys k JOIN merchants m ON m.id = k.merchant_id JOIN balances b ON b.merchant_id = m.id WHERE k.key_hash = $1 AND k.revoked_at IS NULL`
const body = (row) => ({
  available: usd(row.available),
  on_hold: usd(row.onHold),
  total_deposited: usd(row.totalDeposited),
  total_spent: usd(row.totalSpent),
  currency: "USD",
  deposit_addresses: { trc20: row.trc20, bep20: row.bep20 }
})
const serverLayer = NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" })
const PgLive = PgClient.layer({ url: Redacted.make(process.env.DATABASE_URL), maxConnections: 20, idleTimeout: Duration.seconds(30) })
const bearerKey = (h) => (h !== undefined && h.startsWith("Bearer ") ? h.slice(7).trim() : "")
const unauthorized = HttpServerResponse.text("{}", { status: 401, contentType: "application/json" })

let main
const noTracer = HttpMiddleware.withTracerDisabledWhen(() => true)
if (LEVEL === "L0" || LEVEL === "L1" || LEVEL === "L2") {
  const pool = LEVEL !== "L2" ? new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 }) : undefined
  const query = (h) =>
    LEVEL !== "L2"
      ? Effect.async((resume) => {
        pool.query(JOIN_SQL, [h], (err, r) => resume(err ? Effect.die(err) : Effect.succeed(r.rows)))
      })
      : Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(JOIN_SQL, [h]).pipe(Effect.orDie))
  const route = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const key = bearerKey(request.headers["authorization"])
    if (!KEY.test(key)) return unauthorized
    const rows = yield* query(hash(key))
    if (rows.length === 0) return unauthorized
    return HttpServerResponse.text(JSON.stringify(body(rows[0])), { contentType: "application/json" })
  })
  const router = HttpRouter.empty.pipe(HttpRouter.get(PATH, route))
  main = HttpServer.serve(router).pipe(LEVEL === "L1" ? (x) => x : noTracer, Layer.provide(serverLayer), Layer.provide(LEVEL === "L2" ? PgLive : Layer.empty))
} else {
  const Int8 = Schema.Union(Schema.Number, Schema.NumberFromString).pipe(Schema.int(), Schema.filter((n) => Number.isSafeInteger(n)))
  const Row = Schema.Struct({
    available: Int8,
    onHold: Int8,
    totalDeposited: Int8,
    totalSpent: Int8,
    trc20: Schema.NullOr(Schema.String),
    bep20: Schema.NullOr(Schema.String)
  })
  const Balance = Schema.Struct({
    available: Schema.Number,
    on_hold: Schema.Number,
    total_deposited: Schema.Number,
    total_spent: Schema.Number,
    currency: Schema.Literal("USD"),
    deposit_addresses: Schema.Struct({ trc20: Schema.NullOr(Schema.String), bep20: Schema.NullOr(Schema.String) })
  })
  class Unauthorized extends Schema.TaggedError()("Unauthorized", {}, { status: 401 }) {}
  class CurrentMerchant extends Context.Tag("CurrentMerchant")() {}
  class Authentication
    extends HttpApiMiddleware.Tag()("Authentication", { provides: CurrentMerchant, failure: Unauthorized, security: { bearer: HttpApiSecurity.bearer } })
  {}
  let group = HttpApiGroup.make("balance").add(HttpApiEndpoint.get("getBalance", "/balance").addSuccess(Balance))
  if (LEVEL !== "L3") group = group.middleware(Authentication)
  const Api = HttpApi.make("api").add(group.prefix("/api/v1/merchant"))
  const Handlers = HttpApiBuilder.group(Api, "balance", (handlers) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const byKey = SqlSchema.findOne({ Request: Schema.String, Result: Row, execute: (h) => sql.unsafe(JOIN_SQL, [h]) })
      const balance = SqlSchema.findOne({
        Request: Schema.String,
        Result: Row,
        execute: (id) =>
          sql`
        SELECT b.available_cents AS available, b.on_hold_cents AS "onHold", b.total_deposited_cents AS "totalDeposited", b.total_spent_cents AS "totalSpent", m.legacy_trc20 AS trc20, m.legacy_bep20 AS bep20
        FROM balances b JOIN merchants m ON m.id = b.merchant_id WHERE b.merchant_id = ${id}`
      })
      return handlers.handle("getBalance", () =>
        Effect.gen(function*() {
          let row
          if (LEVEL === "L3") {
            const request = yield* HttpServerRequest.HttpServerRequest
            row = yield* byKey(hash(bearerKey(request.headers["authorization"]))).pipe(Effect.orDie, Effect.flatMap(Effect.orDieWith(() => new Error("none"))))
          } else {
            const merchant = yield* CurrentMerchant
            row = yield* balance(merchant.id).pipe(Effect.orDie, Effect.flatMap(Effect.orDieWith(() => new Error("none"))))
          }
          return body(row)
        }))
    }))
  const AuthLive = Layer.effect(
    Authentication,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cache = new Map()
      return {
        bearer: (token) =>
          Effect.gen(function*() {
            const key = Redacted.value(token)
            if (!KEY.test(key)) return yield* new Unauthorized()
            const h = hash(key)
            const now = Date.now()
            const c = cache.get(h)
            if (c !== undefined && c.expiresAt > now) return c.merchant
            const rows =
              yield* sql`SELECT m.id, m.name, m.status FROM api_keys k JOIN merchants m ON m.id = k.merchant_id WHERE k.key_hash = ${h} AND k.revoked_at IS NULL`
                .pipe(Effect.orDie)
            if (rows.length === 0) return yield* new Unauthorized()
            cache.set(h, { merchant: rows[0], expiresAt: now + 2000 })
            return rows[0]
          })
      }
    })
  )
  const requestMiddleware = HttpMiddleware.make((app) =>
    Effect.gen(function*() {
      const requestId = randomUUID()
      yield* HttpApp.appendPreResponseHandler((_req, response) => Effect.sync(() => HttpServerResponse.setHeader(response, "x-request-id", requestId)))
      return yield* Effect.annotateLogs(app, "request_id", requestId)
    })
  )
  const ApiLive = HttpApiBuilder.api(Api).pipe(Layer.provide(Handlers), Layer.provide(AuthLive))
  main = (LEVEL === "L5" ? HttpApiBuilder.serve(requestMiddleware) : HttpApiBuilder.serve())
    .pipe(noTracer, Layer.provide(ApiLive), Layer.provide(serverLayer), Layer.provide(PgLive))
}
let program = Layer.launch(main)
// as the service (src/main.ts): no tracer at run time, so SQL statements make no spans either
if (LEVEL !== "L1") program = program.pipe(Effect.provide(Layer.setTracerEnabled(false)))
if (LEVEL === "L5") program = program.pipe(Effect.provide(RuntimeFlags.enableRuntimeMetrics))
NodeRuntime.runMain(program)
