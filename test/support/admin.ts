/**
 * The admin API from an operator's side (CONTRACT 2): its Error answers, merchants created, read,
 * changed and given legacy addresses through the typed admin client, the merchant routes every
 * refusal is tried on, and what the tests read of its OpenAPI document.
 */
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import { expect } from "vitest"
import type { LegacyAddresses, PatchMerchant } from "../../src/Ops/AdminApi.js"
import { errorBody } from "./expectations.js"
import type { JsonResponse, RunningServer } from "./server.js"

let counter = 0
/** A merchant name no other test takes. */
export const uniqueMerchantName = (prefix = "acme") => `${prefix}-${process.pid}-${counter++}-${randomUUID().slice(0, 8)}`

/** An admin error: the spec's Error body (2.1) with the given status. */
export const expectAdminError = (res: JsonResponse, status: number) => {
  expect({ status: res.status, text: res.text }).toMatchObject({ status })
  const { code, message } = errorBody(res)
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
  // the admin API's own codes (README, "Admin API"), and a message a person can read in one line
  const codes: Record<number, string> = { 400: "ADMIN_INVALID_REQUEST", 401: "ADMIN_UNAUTHORIZED", 404: "ADMIN_NOT_FOUND", 409: "ADMIN_CONFLICT" }
  if (codes[status] !== undefined) expect(code).toBe(codes[status])
  expect(message.length).toBeLessThan(300)
}

/** POST /admin/merchants with a valid body through the typed client: the 201 CreatedMerchant. */
export const createdMerchant = (server: RunningServer, name: string, webhook_url: string | null = null) =>
  server.adminApi.call((client) => client.merchants.createMerchant({ payload: { name, webhook_url } }))

/** GET /admin/merchants/{id} through the typed client (valid id; a 404 or any other answer rejects). */
export const merchantView = (server: RunningServer, id: string) => server.adminApi.call((client) => client.merchants.getMerchant({ path: { id } }))

/** PATCH /admin/merchants/{id} with a valid body through the typed client. */
export const updatedMerchant = (server: RunningServer, id: string, payload: typeof PatchMerchant.Type) =>
  server.adminApi.call((client) => client.merchants.updateMerchant({ path: { id }, payload }))

/** PUT /admin/merchants/{id}/legacy-addresses with a valid body through the typed client. */
export const setLegacyAddresses = (server: RunningServer, id: string, payload: typeof LegacyAddresses.Type) =>
  server.adminApi.call((client) => client.merchants.setLegacyAddresses({ path: { id }, payload }))

/** The fields of the admin API's MerchantView, sorted. */
export const MERCHANT_VIEW_KEYS = ["created_at", "deposit_addresses", "merchant_id", "name", "status", "updated_at", "webhook_url"]

/** Every route of one merchant (method, path, a valid body or none). */
export const merchantRoutes = (id: string): Array<[string, string, unknown]> => [
  ["GET", `/admin/merchants/${id}`, undefined],
  ["PATCH", `/admin/merchants/${id}`, { status: "blocked" }],
  ["POST", `/admin/merchants/${id}/api-key`, undefined],
  ["POST", `/admin/merchants/${id}/webhook-secret`, undefined],
  ["PUT", `/admin/merchants/${id}/legacy-addresses`, { trc20: "T1", bep20: null }]
]

/** What the tests read of an OpenAPI document (its other fields are left out of the decoding). */
const Operation = Schema.Struct({ security: Schema.optional(Schema.Unknown), responses: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
export const PathsOnly = Schema.Struct({ paths: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
export const AdminDocument = Schema.Struct({
  openapi: Schema.String,
  paths: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Operation }) }),
  components: Schema.Struct({ securitySchemes: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
})
