/**
 * The reference texts of the merchant API's OpenAPI document, in one place so that they read as
 * one text: each operation's summary and description, each query, path and header parameter's
 * description, the tags' descriptions, and the webhooks the service sends (OpenAPI 3.1 `webhooks`,
 * with their payloads and headers). The document's schemas and codes come from the contract
 * (`Api.ts` of each feature); `completeDocument` (ApiDocument.ts) adds these.
 */
import type { EventType } from "./Domain/EventType.js"

type Json = Record<string, unknown>

/** The document's introduction (Markdown): what the operations alone do not show. */
export const OVERVIEW = `Browse the live skin catalogue, buy items delivered by trade offer, and follow balance and deposits.

Every request sends \`Authorization: Bearer <API_KEY>\` (keys start with \`mer_live_\`). Errors are
\`{"error": {"code", "message"}}\`: match on \`code\`. Every answer carries \`X-Request-Id\`;
authenticated ones \`X-RateLimit-Limit\` and \`X-RateLimit-Remaining\`, and a 429 \`Retry-After\`.

## Realtime catalogue feed (WebSocket)

\`GET /api/v1/merchant/items/stream?cursor=<X-Catalog-Cursor>&epoch=<X-Catalog-Epoch>\` with the
WebSocket upgrade and the same \`Authorization\` header (never a key in the query string). Take the
full dump first: its \`X-Catalog-Cursor\` and \`X-Catalog-Epoch\` are where the feed starts.
Before the upgrade the usual HTTP errors apply (400 \`MERCHANT_INVALID_QUERY\` for a missing or
malformed cursor or epoch). Every message is one JSON text frame:

- \`{"type":"hello","epoch":E,"cursor":C}\`: the resume point, accepted.
- \`{"type":"changes","epoch":E,"cursor":C,"changes":[...]}\`: the changes after the previous
  message's cursor, in order; each \`{"op":"upsert","item":CatalogItem}\` or
  \`{"op":"remove","id":uuid}\`. \`C\` is the cursor after the last one: store it once applied.
- \`{"type":"heartbeat","epoch":E,"cursor":C}\`: at least every 15 s when nothing changes.
- \`{"type":"reset","reason":"cursor_expired"|"cursor_invalid"|"epoch_changed"}\`, then close 4409:
  take a new dump and start again.

Close 4408: you read too slowly; reconnect from your last applied cursor. Close 1001: the service
is shutting down; reconnect from your last applied cursor (any instance resumes any cursor).

## Webhooks

Signed POSTs of every purchase state change and credited deposit (see *Webhooks* below): verify
\`X-Signature\` (HMAC-SHA256 of \`X-Timestamp + "." + body\` with your webhook secret) in constant
time, refuse timestamps more than 300 s away, dedupe on \`X-Event-Id\`, answer 2xx fast.

## Test mode

In the simulator the trade URL's \`token\` picks a purchase's outcome: any ordinary token completes;
\`declined\`, \`expired0\`, \`private0\`, \`badtoken\`, \`slowack0\`, \`topup000\`, \`revbuyer\`,
\`revselr0\` and \`review00\` take the other paths (the repository's docs/integration.md has the
table).`

/** Summary and description of each operation, by its operationId (group.endpoint). */
export const OPERATIONS: Record<string, readonly [summary: string, description: string]> = {
  "balance.getBalance": [
    "Read the balance",
    "`available + total_spent = total_deposited`. A purchase is debited at creation: its price moves from `available` to `total_spent` at once; " +
    "`on_hold` is the part of `total_spent` still in flight, shown apart and not subtracted again. A refund moves the price back."
  ],
  "deposits.getFees": [
    "Deposit commission tiers",
    "The commission taken from each USDT deposit, by the deposit's USD amount. Also with the cabinet's session."
  ],
  "deposits.listDeposits": [
    "List credited deposits",
    "Newest first, cursor-paginated. `amount` is what was credited, after the commission. Also with the cabinet's session."
  ],
  "deposits.listWallets": [
    "List deposit wallets",
    "From saved state only (no provider call). Send funds only to a wallet whose `can_deposit` is true. Also with the cabinet's session."
  ],
  "deposits.requestWallet": [
    "Request a deposit wallet",
    "One wallet per network; a repeat returns the saved request and never creates a second provider wallet. On 502, read the saved state and reconcile; " +
    "never request a replacement. With the cabinet's session, an allowed Origin is required."
  ],
  "deposits.reconcileWallet": [
    "Reconcile a deposit wallet",
    "Reads the wallet provider (no creation) and saves what it says: binds a created wallet, refreshes a bound one's active or disabled status. " +
    "Available while issuance is disabled. With the cabinet's session, an allowed Origin is required."
  ],
  "catalogue.listItems": [
    "List catalogue items",
    "Live items with filters and sort, cursor-paginated (a cursor belongs to its filters and sort). To hold the whole catalogue, take the full dump and follow the feed."
  ],
  "catalogue.searchItems": ["Search items by exact name", "Live items with exactly this market_hash_name, cheapest first."],
  "catalogue.fullDump": [
    "Download the full catalogue",
    "A snapshot of every live item, rebuilt about every two minutes (gzip when accepted). Keep `X-Catalog-Cursor` and `X-Catalog-Epoch` to open the realtime feed " +
    "(`GET /items/stream?cursor=&epoch=`, a WebSocket) from exactly this snapshot, and `ETag` for `If-None-Match`."
  ],
  "purchases.buy": [
    "Buy an item by id",
    "Creates the purchase and debits the price at once (201); delivery follows by trade offer. Idempotent on `custom_id`: the same request again returns " +
    "the same purchase with no second debit; the same `custom_id` with another item, recipient or a lower `max_price` is 409 MERCHANT_DUPLICATE_CUSTOM_ID."
  ],
  "purchases.buySync": [
    "Buy an item by id and wait for acknowledgement",
    "As /buy, then waits for the supplier's acknowledgement: 200 acknowledged, 202 still in flight when the wait ends, 409 with the failed purchase."
  ],
  "purchases.buyByName": [
    "Buy the cheapest item of a name",
    "Up to 5 attempts over the cheapest matching items within `max_price`. A repeat with the same `custom_id` returns the latest attempt and never starts a second cycle."
  ],
  "purchases.listPurchases": [
    "List purchases",
    "Newest first, with filters, cursor-paginated. After an unknown result, list by `custom_id` (following next_cursor) before anything else."
  ],
  "purchases.getPurchase": ["Read a purchase", "404 for an unknown purchase or another merchant's."],
  "webhooks.listWebhookEvents": [
    "List webhook deliveries",
    "The read-only audit log of events sent to the webhook URL and how their delivery went. It is not a ledger: reconcile from the API."
  ],
  "cabinetSignIn.startInvite": [
    "Start an invite",
    "Shows the merchant's name and the second factor to set up (TOTP: SHA-1, 6 digits, 30 s); the same secret on every start of one invite. Needs an allowed Origin."
  ],
  "cabinetSignIn.completeInvite": [
    "Complete an invite",
    "Sets the login (an email address), the password (12 to 256 characters) and the second factor, ends every earlier session, and signs in (Set-Cookie). " +
    "The API key is not changed. Needs an allowed Origin."
  ],
  "cabinetSignIn.login": [
    "Sign in to the cabinet",
    "Password and a fresh code (each code works once). Any wrong part is the same 401. Five failures for one login within 15 minutes lock it for the rest " +
    "of that window. Needs an allowed Origin."
  ],
  "cabinetSignIn.logout": ["Sign out of the cabinet", "Ends the session, if any, and clears the cookie (204 either way). Needs an allowed Origin."],
  "cabinet.me": ["The signed-in merchant", "Profile, webhook URL and the API key's last 4 characters."],
  "cabinet.balance": ["Read the balance (cabinet)", "The merchant API's balance, for the session's merchant."],
  "cabinet.purchases": ["List purchases (cabinet)", "The merchant API's purchase list, for the session's merchant."],
  "cabinet.webhookEvents": ["List webhook deliveries (cabinet)", "The merchant API's webhook log, for the session's merchant."],
  "cabinet.newApiKey": ["Issue a new API key", "Shown only in this answer; the previous key stops working at once. Needs a fresh code and an allowed Origin."],
  "cabinet.setWebhook": ["Set the webhook URL", "An http(s) URL of at most 2048 characters, or null for none. Needs an allowed Origin."],
  "cabinet.newWebhookSecret": [
    "Issue a new webhook signing secret",
    "Shown only in this answer. With `previous_valid_seconds`, the replaced secret still signs deliveries (X-Signature-Previous) for that long. " +
    "Needs a fresh code and an allowed Origin."
  ]
}

/** Parameter descriptions by name (the same meaning wherever the name appears). */
export const PARAMETERS: Record<string, string> = {
  cursor: "The `next_cursor` of the previous page; leave out for the first page. A cursor is only valid with the filters and sort it came with.",
  limit: "Items per page.",
  market_hash_name: "The item's exact market name, e.g. `AK-47 | Redline (Field-Tested)`.",
  min_price: "Lowest price in USD (inclusive).",
  max_price: "Highest price in USD (inclusive).",
  category: "Only this category, e.g. `Rifle`.",
  exterior: "Only this exterior, e.g. `Field-Tested`.",
  rarity: "Only this rarity, e.g. `Classified`.",
  min_float: "Lowest float value (inclusive), 0 to 1.",
  max_float: "Highest float value (inclusive), 0 to 1.",
  delivery_type: "`instant` or `manual` delivery.",
  sort: "Order of the list.",
  status: "Only this status.",
  custom_id: "Only the purchases of this custom_id (the attempts of a buy-by-name share one).",
  target_steam_id: "Only purchases delivered to this SteamID64.",
  from: "Created at or after this date-time (ISO 8601; give the offset).",
  to: "Created before this date-time (ISO 8601; give the offset).",
  order_id: "Only the events of this purchase.",
  walletId: "The wallet's id.",
  purchaseId: "The purchase's id.",
  "if-none-match": "The `ETag` of the snapshot you hold: 304 with no body while it is current.",
  "accept-encoding": "`gzip` for the compressed dump (recommended)."
}

export const TAGS: Record<string, string> = {
  Balance: "The merchant's USD balance, funded by USDT deposits.",
  Deposits: "Commission tiers, credited deposits and USDT deposit wallets. These endpoints also accept the cabinet's session.",
  Catalogue: "The live catalogue: list, search and the full dump. The realtime feed is a WebSocket at /items/stream (see the guide).",
  Purchases: "Buying by id (async or waiting for acknowledgement) and by name, and following purchases.",
  "Webhook events": "The audit log of webhook deliveries.",
  "Cabinet: sign-in": "The merchant cabinet's onboarding by invite, sign-in and sign-out (session cookie `mer_session`).",
  Cabinet: "The merchant cabinet's endpoints for a signed-in merchant."
}

// ---- webhooks --------------------------------------------------------------------------------------

const USD = { type: "number", description: "USD, at most two decimals." }

const PURCHASE_DATA = {
  type: "object",
  required: ["purchase_id", "custom_id", "status", "market_hash_name", "price", "target_steam_id"],
  properties: {
    purchase_id: { type: "string", format: "uuid" },
    custom_id: { type: "string" },
    status: { type: "string", enum: ["created", "processing", "sent_to_steam", "completed", "failed"] },
    market_hash_name: { type: "string" },
    price: USD,
    target_steam_id: { type: "string" },
    trade_offer_id: { type: "string", description: "When known." },
    trade_offer_url: { type: "string", description: "When known." },
    failure_code: { type: "string", description: "When failed. Accept codes you do not know." },
    failure_message: { type: "string", description: "When failed." },
    refunded_amount: { ...USD, description: "When refunded." },
    balance_after: { ...USD, description: "The balance after the change, when it moved it." }
  }
}

const DEPOSIT_DATA = {
  type: "object",
  required: ["deposit_id", "amount", "currency", "balance_after"],
  properties: {
    deposit_id: { type: "string", format: "uuid" },
    amount: { ...USD, description: "Credited, after the commission." },
    currency: { type: "string", enum: ["USD"] },
    network: { type: "string", enum: ["tron", "bsc"] },
    tx_id: { type: "string" },
    balance_after: USD
  }
}

const header = (description: string, pattern?: string) => ({ required: true, description, schema: { type: "string", ...(pattern ? { pattern } : {}) } })

const WEBHOOK_HEADERS = {
  "X-Signature": header(
    "Lowercase hex HMAC-SHA256 of `X-Timestamp + \".\" + body`, keyed by the current webhook secret. Compare in constant time.",
    "^[0-9a-f]{64}$"
  ),
  "X-Signature-Previous": {
    required: false,
    description: "The same HMAC with the previous secret, while a rotation's overlap lasts.",
    schema: { type: "string", pattern: "^[0-9a-f]{64}$" }
  },
  "X-Timestamp": header("Unix seconds of this attempt. Refuse deliveries more than 300 s away from your clock.", "^[0-9]+$"),
  "X-Event-Id": header("The event's id: the same on every attempt and replay. Dedupe on it."),
  "X-Event": header("The event type.")
}

/** Each event the outbox writes (Domain/EventType.ts), with what it means and its payload: a type missing here does not compile. */
const EVENTS: Record<EventType, readonly [description: string, data: Json]> = {
  "purchase.created": ["A purchase was created and its price debited.", PURCHASE_DATA],
  "purchase.processing": ["The supplier acknowledged the purchase.", PURCHASE_DATA],
  "purchase.sent_to_steam": ["The trade offer was sent to the buyer.", PURCHASE_DATA],
  "purchase.completed": ["The buyer accepted the trade offer.", PURCHASE_DATA],
  "purchase.failed": ["The purchase failed; `failure_code` says why. Confirm refunds from `purchase.refunded` or the balance.", PURCHASE_DATA],
  "purchase.refunded": ["The price was credited back.", PURCHASE_DATA],
  "purchase.reverted": ["A completed trade was reversed by the game platform.", PURCHASE_DATA],
  "balance.deposited": ["A deposit was credited.", DEPOSIT_DATA]
}

/** OpenAPI 3.1 `webhooks`: one POST per event type, with its body and headers. */
export const webhooks = (): Json =>
  Object.fromEntries(
    Object.entries(EVENTS).map(([type, [description, data]]) => [type, {
      post: {
        summary: type,
        description: `${description} Answer 2xx within the timeout; anything else is retried on the schedule (about 27.5 hours).`,
        operationId: `webhook.${type}`,
        parameters: Object.entries(WEBHOOK_HEADERS).map(([name, h]) => ({ name, in: "header", ...h })),
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["event_id", "event_type", "created_at", "data"],
                properties: {
                  event_id: { type: "string", format: "uuid" },
                  event_type: { type: "string", enum: [type] },
                  created_at: { type: "string", format: "date-time" },
                  data
                }
              }
            }
          }
        },
        responses: { "200": { description: "Received (any 2xx)." } }
      }
    }])
  )
